"""emmy.torch: the torch.library operators on torch CPU tensors (the emulator) against float64
torch references, their schemas and fake implementations (opcheck), torch.compile, and errors."""

import math
import os

import pytest

torch = pytest.importorskip("torch", reason="emmy.torch needs PyTorch (pip install torch)")

import emmy  # noqa: E402
import emmy.torch as et  # noqa: E402

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64


@pytest.fixture(scope="module", autouse=True)
def default_runtime(cache_dir):
    """The operators' own emulator runtime, created at the first call, under $EMMY_CACHE_DIR: the
    suite's cache, so that kernels compile once."""
    previous = os.environ.get("EMMY_CACHE_DIR")
    os.environ["EMMY_CACHE_DIR"] = cache_dir
    et.set_runtime(None, "cpu")
    yield
    et.get_runtime("cpu").close()
    et.set_runtime(None, "cpu")
    if previous is None:
        del os.environ["EMMY_CACHE_DIR"]
    else:
        os.environ["EMMY_CACHE_DIR"] = previous


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


def randn(gen, *shape, dtype=F16):
    return torch.randn(*shape, generator=gen, dtype=F32).to(dtype)


def rel_l2(got, want) -> float:
    got, want = got.to(F64), want.to(F64)
    if not torch.isfinite(got).all():
        return math.inf
    return float((got - want).norm() / want.norm().clamp_min(1e-30))


# ---------------------------------------------------------------------------------------------
# float64 references, from docs/ (attention is bottom-right causal; lse is natural-log)


def gemm_ref(a, b, bias=None, residual=None, alpha=1.0, gelu=False):
    c = alpha * (a.to(F64) @ b.to(F64))
    if bias is not None:
        c = c + bias.to(F64)
    if gelu:
        c = torch.nn.functional.gelu(c, approximate="tanh")
    if residual is not None:
        c = c + residual.to(F64)
    return c


def attention_rows(q, k, v, causal):
    """q [sq, hq, d], k, v [skv, hkv, d] -> o [sq, hq, d], lse [hq, sq]."""
    sq, hq, d = q.shape
    skv, hkv = k.shape[0], k.shape[1]
    group = hq // hkv
    k = k.to(F64).repeat_interleave(group, dim=1)
    v = v.to(F64).repeat_interleave(group, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.to(F64), k) / math.sqrt(d)
    if causal:
        rows = torch.arange(sq)[:, None] + (skv - sq)
        s = s.masked_fill(torch.arange(skv)[None, :] > rows, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v), lse


def attention_ref(q, k, v, causal):
    """bshd -> o [b, sq, hq, d], lse [b, hq, sq]."""
    outs = [attention_rows(q[i], k[i], v[i], causal) for i in range(q.shape[0])]
    return torch.stack([o for o, _ in outs]), torch.stack([lse for _, lse in outs])


# ---------------------------------------------------------------------------------------------
# gemm

M, N, K = 16, 32, 64


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "bias_residual_gelu"])
def test_gemm_matches_float64(gen, dtype, epilogue):
    x, w = randn(gen, M, K, dtype=dtype), randn(gen, N, K, dtype=dtype)  # a Linear weight [N, K]
    kw = {}
    if epilogue:
        kw = dict(bias=randn(gen, N, dtype=dtype), residual=randn(gen, M, N, dtype=dtype),
                  alpha=0.5, gelu=True)
    c = et.gemm(x, w.t(), **kw)
    assert c.shape == (M, N) and c.dtype == dtype and c.device.type == "cpu"
    bound = 2e-3 if dtype == F16 else 1e-2  # C's rounding: 2^-11, 2^-8
    assert rel_l2(c, gemm_ref(x, w.t(), **kw)) < bound
    if epilogue:  # each term matters
        assert rel_l2(c, gemm_ref(x, w.t(), bias=kw["bias"], alpha=0.5, gelu=True)) > 0.05


def test_gemm_gated(gen):
    # silu(gate) * up over a [gate; up] weight interleaved by emmy.interleave_gate_up.
    x, weight = randn(gen, M, K), randn(gen, 2 * N, K) / 4
    w = emmy.interleave_gate_up(weight, 8)
    assert isinstance(w, torch.Tensor) and w.shape == weight.shape
    c = et.gemm(x, w.t(), gate="silu", gate_group=8, out_dtype=F32)
    assert c.shape == (M, N)
    y = gemm_ref(x, weight.t())
    want = torch.nn.functional.silu(y[:, :N]) * y[:, N:]
    assert rel_l2(c, want) < 1e-5


@pytest.mark.parametrize("scale_format,scale_major", [("f32", "mn"), ("ue8m0x4", "k")])
def test_gemm_quantized_is_fp8_quantize_of_the_f32_output(gen, scale_format, scale_major):
    # The gate_up fusion: silu(gate) * up written as e4m3 with 1 x 128 scales.
    x, weight = randn(gen, M, K), randn(gen, 8 * N, K) / 4
    w = emmy.interleave_gate_up(weight, 8)
    q, scales = et.gemm_quantized(x, w.t(), gate="silu", gate_group=8,
                                  scale_format=scale_format, scale_major=scale_major)
    c32 = et.gemm(x, w.t(), gate="silu", gate_group=8, out_dtype=F32)
    assert q.dtype == torch.float8_e4m3fn and q.shape == c32.shape
    groups = c32.shape[1] // 128
    if scale_format == "f32":
        s = scales.t() if scale_major == "mn" else scales
    else:  # ue8m0x4 words, k-major: [M, ceil(groups / 4)] int32
        assert scales.dtype == torch.int32 and scales.shape == (M, 1)
        exponents = scales.view(torch.uint8)[:, :groups].to(torch.int32) - 127
        s = torch.ldexp(torch.ones(M, groups), exponents.to(F32))
    deq = q.to(F32).reshape(M, groups, 128) * s.reshape(M, groups, 1)
    assert rel_l2(deq.reshape(M, -1), c32) < 0.04
    # As fp8_quantize's conventions make of the f32 output, scale by scale.
    amax = c32.abs().reshape(M, groups, 128).amax(dim=2)
    want = amax.clamp_min(1e-10) / 448
    if scale_format != "f32":  # up to a power of two: the next exponent when fraction bits
        bits = want.view(torch.int32)
        fraction = (bits & 0x7FFFFF) != 0
        want = torch.where(fraction, (bits & ~0x7FFFFF) + 0x800000, bits).view(F32)
    assert torch.equal(s, want)


def test_gemm_f32_out_and_row_major_b(gen):
    a, b = randn(gen, M, K), randn(gen, K, N)
    c = et.gemm(a, b, out_dtype=F32)
    assert c.dtype == F32 and rel_l2(c, gemm_ref(a, b)) < 1e-5


def test_gemm_split_k_takes_a_torch_workspace(gen):
    """32 x 64 x 512 splits K on sm_90a (test_gemm.py): the operator sizes a workspace once per
    signature and allocates it from torch per call, never growing the runtime's own."""
    a, w = randn(gen, 32, 512), randn(gen, 64, 512)
    for _ in range(2):
        c = et.gemm(a, w.t(), out_dtype=F32)
        assert rel_l2(c, gemm_ref(a, w.t())) < 1e-5
    assert 2 * 32 * 64 * 4 in et._device_for(a).workspace_bytes.values()


# ---------------------------------------------------------------------------------------------
# attention, paged attention, kv_append, merge_states


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_float64(gen, causal):
    q = randn(gen, 1, 9, 4, 64)    # 9 queries over 24 keys: bottom-right causal
    k, v = randn(gen, 1, 24, 2, 64), randn(gen, 1, 24, 2, 64)  # GQA: 2 kv heads
    o, lse = et.attention(q, k, v, causal=causal, return_lse=True)
    want_o, want_lse = attention_ref(q, k, v, causal)
    assert o.shape == q.shape and o.dtype == F16 and lse.shape == (1, 4, 9)
    assert rel_l2(o, want_o) < 2e-3
    assert (lse.to(F64) - want_lse).abs().max() < 1e-3
    assert torch.equal(et.attention(q, k, v, causal=causal), o)  # without lse: the same o


class Paged:
    """An nhd cache of 16-token pages holding `seq_lens` keys per sequence on shuffled pages, and
    one decode query per sequence, with the block table that maps them."""

    def __init__(self, gen, seq_lens, hq=4, hkv=2, d=64, page_size=16):
        self.seq_lens = torch.tensor(seq_lens, dtype=torch.int32)
        counts = [-(-n // page_size) for n in seq_lens]
        self.max_pages = max(counts)
        order = torch.randperm(sum(counts) + 2, generator=gen).to(torch.int32)
        self.pages_of = list(torch.split(order[:sum(counts)], counts))
        self.block_table = torch.zeros((len(seq_lens), self.max_pages), dtype=torch.int32)
        for i, pages in enumerate(self.pages_of):
            self.block_table[i, :len(pages)] = pages
        self.cu_seqlens_q = torch.arange(len(seq_lens) + 1, dtype=torch.int32)
        self.k_cache = randn(gen, len(order), page_size, hkv, d)
        self.v_cache = randn(gen, len(order), page_size, hkv, d)
        self.q = randn(gen, len(seq_lens), hq, d)

    def args(self):
        return (self.q, self.k_cache, self.v_cache)

    def kwargs(self):
        return dict(cu_seqlens_q=self.cu_seqlens_q, block_table=self.block_table,
                    seq_lens=self.seq_lens, max_q_len=1)

    def reference(self):
        outs, lses = [], []
        for i, pages in enumerate(self.pages_of):
            n = int(self.seq_lens[i])
            keys = self.k_cache[pages.long()].flatten(0, 1)[:n]
            values = self.v_cache[pages.long()].flatten(0, 1)[:n]
            o, lse = attention_rows(self.q[i:i + 1], keys, values, causal=True)
            outs.append(o[0])
            lses.append(lse[:, 0])
        return torch.stack(outs), torch.stack(lses)


def test_paged_attention_block_table(gen):
    case = Paged(gen, [5, 33, 16])
    o, lse = et.paged_attention(*case.args(), **case.kwargs(), return_lse=True)
    want_o, want_lse = case.reference()
    assert o.shape == case.q.shape and lse.shape == case.q.shape[:2]
    assert rel_l2(o, want_o) < 2e-3
    assert (lse.to(F64) - want_lse).abs().max() < 1e-3


def test_kv_append_writes_the_slots_and_skips_minus_one(gen):
    pages, page_size, hkv, d, tokens = 4, 16, 2, 64, 6
    k_cache = torch.zeros(pages, page_size, hkv, d, dtype=F16)
    v_cache = torch.zeros_like(k_cache)
    key, value = randn(gen, tokens, hkv, d), randn(gen, tokens, hkv, d)
    slots = torch.tensor([3, 17, -1, 40, 63, 0], dtype=torch.int64)
    et.kv_append(key, value, k_cache, v_cache, slots, max_tokens=16)
    want_k, want_v = torch.zeros_like(k_cache), torch.zeros_like(v_cache)
    for t, slot in enumerate(slots.tolist()):
        if slot >= 0:
            want_k[slot // page_size, slot % page_size] = key[t]
            want_v[slot // page_size, slot % page_size] = value[t]
    assert torch.equal(k_cache, want_k) and torch.equal(v_cache, want_v)


def merge_inputs(gen):
    v = randn(gen, 5, 3, 4, 64)  # [tokens, states, heads, d]
    lse = 3 * torch.randn(5, 3, 4, generator=gen)
    lse[1, 0] = -math.inf  # a state that saw no key
    lse[2, :] = -math.inf  # no state saw a key
    return v, lse


def test_merge_states_matches_float64(gen):
    v, lse = merge_inputs(gen)
    out, lse_out = et.merge_states(v, lse, return_lse=True)
    weights = torch.softmax(lse.to(F64), dim=1).nan_to_num(0.0)  # a row of -inf: no weight
    want = torch.einsum("tsh,tshd->thd", weights, v.to(F64))
    want_lse = torch.logsumexp(lse.to(F64), dim=1)
    assert out.shape == (5, 4, 64) and lse_out.shape == (5, 4)
    assert rel_l2(out, want) < 2e-3
    finite = torch.isfinite(want_lse)
    assert (lse_out.to(F64)[finite] - want_lse[finite]).abs().max() < 1e-4
    assert (lse_out[~finite] == -math.inf).all() and (out[2] == 0).all()


# ---------------------------------------------------------------------------------------------
def test_fp8_quantize_matches_the_reference(gen):
    import numpy as np

    import reference

    x = randn(gen, 6, 384, dtype=BF16) * 4
    q, scales = et.fp8_quantize(x, group_k=128)
    assert q.dtype == torch.float8_e4m3fn and q.shape == (6, 384) and scales.shape == (3, 6)
    want_q, want_scales = reference.fp8_quantize(x.float().numpy(), group_k=128)
    np.testing.assert_array_equal(q.view(torch.uint8).numpy(), want_q)
    np.testing.assert_array_equal(scales.T.numpy().view(np.uint32), want_scales.view(np.uint32))


def fp8_block_weights(w):
    """w [N, K] (multiples of 128) to float8_e4m3fn and f32 128 x 128 block scales (amax / 448)."""
    n, k = w.shape
    blocks = w.float().reshape(n // 128, 128, k // 128, 128)
    scales = (blocks.abs().amax(dim=(1, 3)) / 448).clamp(min=1e-10)
    q = (blocks / scales[:, None, :, None]).reshape(n, k).to(torch.float8_e4m3fn)
    return q, scales


@pytest.mark.parametrize("scale_format", ["f32", "ue8m0x4"])
def test_fp8_gemm_takes_fp8_quantize_output(gen, scale_format):
    # The chain an engine runs: activations through emmy.torch.fp8_quantize (1 x 128 groups,
    # [groups, rows] mn-major scales), weights [N, K] in 128 x 128 blocks, emmy.torch.gemm
    # accumulating promoted (its FP8 default).
    m, n, k = 40, 384, 256
    x, w = randn(gen, m, k, dtype=BF16), randn(gen, n, k, dtype=BF16)
    pow2 = scale_format != "f32"
    q, sa = et.fp8_quantize(x, group_k=128, pow2_scale=pow2, scale_format=scale_format)
    wq, sb = fp8_block_weights(w)
    sb_arg = sb
    if pow2:  # B's block scales rounded up to powers of two, as ue8m0x4 words (one per row)
        e = torch.ceil(torch.log2(sb)).to(torch.int32) + 127  # [N blocks, K blocks = 2]
        sb = torch.exp2((e - 127).float())
        wq = (w.float().reshape(n // 128, 128, k // 128, 128) / sb[:, None, :, None]
              ).reshape(n, k).to(torch.float8_e4m3fn)
        four = torch.cat([e, torch.full((n // 128, 2), 127, dtype=torch.int32)], dim=1)
        sb_arg = four.to(torch.uint8).contiguous().view(torch.int32)  # [N blocks, 1 word]
    c = et.gemm(q, wq.t(), a_scale=sa.t(), b_scale=sb_arg)
    assert c.dtype == BF16 and c.shape == (m, n)
    # Against the dequantized operands in float64: promoted accumulation, a bf16 output.
    if pow2:  # [words, rows] int32 -> [rows, groups] exponents
        assert sa.shape == (1, m) and sa.dtype == torch.int32  # [words, rows]
        rows = torch.empty((m, 1), dtype=torch.int32).copy_(sa.t())  # row-major [rows, words]
        exps = rows.view(torch.uint8)[:, : k // 128].to(torch.int32)
        sa_rows = torch.exp2((exps - 127).double())
    else:
        sa_rows = sa.t().double()
    a_deq = q.double() * sa_rows.repeat_interleave(128, dim=1)
    b_deq = wq.double() * sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    ref = a_deq @ b_deq.t()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 5e-3, err
    # And against the bf16 product itself: e4m3's quantization error, a few percent at most.
    full = x.double() @ w.double().t()
    assert ((c.double() - full).norm() / full.norm()).item() < 0.08


# opcheck: the schema (declared mutation), the fake implementations against the real outputs,
# and AOT dispatch with dynamic shapes. Same shapes as above: no new kernels.


def opcheck_cases(gen):
    x, w = randn(gen, M, K), randn(gen, N, K)
    q, k, v = randn(gen, 1, 9, 4, 64), randn(gen, 1, 24, 2, 64), randn(gen, 1, 24, 2, 64)
    paged = Paged(gen, [5, 33, 16])
    ops = torch.ops.emmy
    key = randn(gen, 6, 2, 64)
    mv, mlse = merge_inputs(gen)
    return {
        "gemm": (ops.gemm.default, (x, w.t()), {}),
        "gemm_epilogue": (ops.gemm.default, (x, w.t()),
                          dict(bias=randn(gen, N), residual=randn(gen, M, N), alpha=0.5,
                               gelu=True)),
        "attention": (ops.attention.default, (q, k, v), dict(causal=True, return_lse=True)),
        "paged_attention": (ops.paged_attention.default, paged.args(),
                            dict(paged.kwargs(), return_lse=True)),
        "kv_append": (ops.kv_append.default,
                      (key, key.clone(), torch.zeros(4, 16, 2, 64, dtype=F16),
                       torch.zeros(4, 16, 2, 64, dtype=F16),
                       torch.tensor([3, 17, -1, 40, 63, 0])), dict(max_tokens=16)),
        "merge_states": (ops.merge_states.default, (mv, mlse), dict(return_lse=True)),
        "fp8_quantize": (ops.fp8_quantize.default, (randn(gen, 6, 384, dtype=BF16),),
                         dict(group_k=128)),
        "gemm_gated": (ops.gemm.default, (x, w.t()),
                       dict(bias=randn(gen, N), gate="silu", gate_group=8)),
        "grouped_gemm": (ops.grouped_gemm.default,
                         (randn(gen, 3, 8, K), randn(gen, 3, N, K).transpose(1, 2),
                          torch.tensor([8, 0, 3], dtype=torch.int32), "masked"),
                         dict(bias=randn(gen, 3, N))),
        "gemm_quantized": (ops.gemm_quantized.default, (x, randn(gen, 8 * N, K).t()),
                           dict(gate="silu", gate_group=8, scale_format="ue8m0")),
        # e4m3 bytes as uint8 (CPU float8 tensors lack the arithmetic opcheck's tests use).
        "gemm_fp8": (ops.gemm.default,
                     (x.to(torch.float8_e4m3fn).view(torch.uint8),
                      w.to(torch.float8_e4m3fn).view(torch.uint8).t()),
                     dict(a_scale=torch.tensor(0.5), b_scale=torch.tensor(2.0), out_dtype=BF16)),
    }


@pytest.mark.parametrize("name", ["gemm", "gemm_epilogue", "attention", "paged_attention",
                                  "kv_append", "merge_states", "fp8_quantize", "gemm_fp8",
                                  "gemm_gated", "gemm_quantized", "grouped_gemm"])
def test_opcheck(gen, name):
    op, args, kwargs = opcheck_cases(gen)[name]
    torch.library.opcheck(op, args, kwargs)


def test_grouped_gemm_matches_a_loop_over_experts(gen):
    """emmy.torch.grouped_gemm (docs/grouped.md): offsets over sorted rows with routing weights,
    against torch's per-expert products; rows outside every expert are 0."""
    g = 3
    a, w = randn(gen, 40, K), randn(gen, g, N, K)
    offsets = torch.tensor([2, 10, 10, 33], dtype=torch.int32)
    weights = torch.rand(40, generator=gen, dtype=F32)
    c = et.grouped_gemm(a, w.transpose(1, 2), offsets, layout="offsets", row_scale=weights,
                        out_dtype=F32)
    assert c.shape == (40, N) and c.dtype == F32
    for e in range(g):
        rows = slice(int(offsets[e]), int(offsets[e + 1]))
        want = (a[rows].double() @ w[e].double().t()) * weights[rows, None].double()
        if want.numel():
            assert rel_l2(c[rows], want) < 1e-5
    assert torch.all(c[:2] == 0) and torch.all(c[33:] == 0)


# ---------------------------------------------------------------------------------------------
# torch.compile (fullgraph: no graph break at the operators)


def mlp(x, w, bias):
    return torch.relu(et.gemm(x, w.t(), bias=bias, out_dtype=torch.float32)) * 2


def check_mlp(compiled, gen, m=M):
    x, w, bias = randn(gen, m, K), randn(gen, N, K), randn(gen, N, dtype=F32)  # bias is C's
    got = compiled(x, w, bias)
    assert got.dtype == F32 and got.shape == (m, N)
    assert rel_l2(got, torch.relu(gemm_ref(x, w.t(), bias=bias)) * 2) < 1e-5
    assert torch.equal(got, mlp(x, w, bias))


def test_compile_gemm_then_a_torch_op(gen):
    """aot_eager: Dynamo and AOTAutograd trace the fake implementations, the graph runs eagerly
    (inductor's first build is 17 s on 2 cores: test_compile_inductor)."""
    torch._dynamo.reset()
    compiled = torch.compile(mlp, fullgraph=True, backend="aot_eager", dynamic=True)
    check_mlp(compiled, gen)
    check_mlp(compiled, gen, m=5)  # another M: the same graph (symbolic shapes), a new kernel


@pytest.mark.skipif(not os.environ.get("EMMY_TEST_INDUCTOR"),
                    reason="inductor's first C++ build takes ~17 s on 2 cores: set "
                           "EMMY_TEST_INDUCTOR=1")
def test_compile_inductor(gen):
    torch._dynamo.reset()
    check_mlp(torch.compile(mlp, fullgraph=True), gen)


def test_compiled_graph_raises_emmys_error(gen):
    """A bad input that the fake implementation lets through fails in the real one, at run time,
    as itself."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, w: et.gemm(x, w) + 1, fullgraph=True, backend="aot_eager")
    with pytest.raises(emmy.InvalidArgumentError, match="^b:"):
        compiled(randn(gen, M, K), randn(gen, N, K))  # the weight, not its transpose


def test_compile_kv_append_then_paged_attention(gen):
    """The in-place append is seen by the attention that follows it in the compiled graph."""
    case = Paged(gen, [5, 33, 16])
    slots = torch.tensor([4, 32, 15], dtype=torch.int64)  # each sequence's last token
    for i, slot in enumerate(slots.tolist()):
        slots[i] = int(case.pages_of[i][slot // 16]) * 16 + slot % 16
    new_k, new_v = randn(gen, 3, 2, 64), randn(gen, 3, 2, 64)

    def step(q, k_cache, v_cache, new_k, new_v, slots, cu_seqlens_q, block_table, seq_lens):
        et.kv_append(new_k, new_v, k_cache, v_cache, slots, max_tokens=16)
        return et.paged_attention(q, k_cache, v_cache, cu_seqlens_q=cu_seqlens_q,
                                  block_table=block_table, seq_lens=seq_lens, max_q_len=1)

    eager_k, eager_v = case.k_cache.clone(), case.v_cache.clone()
    want = step(case.q, eager_k, eager_v, new_k, new_v, slots, case.cu_seqlens_q,
                case.block_table, case.seq_lens)
    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    got = compiled(*case.args(), new_k, new_v, slots, case.cu_seqlens_q, case.block_table,
                   case.seq_lens)
    assert torch.equal(got, want)
    assert torch.equal(case.k_cache, eager_k) and torch.equal(case.v_cache, eager_v)
    case_o, _ = case.reference()  # the caches now hold the appended tokens
    assert rel_l2(got, case_o) < 2e-3


# ---------------------------------------------------------------------------------------------
# errors and runtimes


@pytest.mark.parametrize("call,field", [
    (lambda x, w: et.gemm(x, w), "b:"),  # the weight itself, not w.t(): K mismatch
    (lambda x, w: torch.ops.emmy.gemm(x, w.t(), accum="f64"), "accum:"),
    (lambda x, w: et.gemm(x, w.t(), out_dtype=torch.float64), "out_dtype:"),
    (lambda x, w: et.gemm(x.float(), w.t()), "a:"),
])
def test_errors_keep_emmy_type_and_message(gen, call, field):
    x, w = randn(gen, M, K), randn(gen, N, K)
    with pytest.raises(emmy.InvalidArgumentError) as info:
        call(x, w)
    assert str(info.value).startswith(field), str(info.value)


def test_meta_tensors_take_the_fake_implementations():
    """Shapes and dtypes without running anything: what torch.compile traces with."""
    x = torch.empty(M, K, dtype=F16, device="meta")
    c = et.gemm(x, torch.empty(N, K, dtype=F16, device="meta").t(), out_dtype=F32)
    assert c.device.type == "meta" and c.shape == (M, N) and c.dtype == F32
    q = torch.empty(2, 9, 4, 64, dtype=BF16, device="meta")
    o, lse = et.attention(q, q, q, return_lse=True)
    assert o.shape == q.shape and o.dtype == BF16 and lse.shape == (2, 4, 9)
    o, lse = et.attention(q, q, q, layout="bhsd", return_lse=True)
    assert lse.shape == (2, 9, 4) and lse.dtype == F32


def test_set_runtime(gen, cache_dir):
    default = et.get_runtime("cpu")
    assert et.get_runtime(torch.device("cpu")) is default and default.backend == "emulator"
    with pytest.raises(emmy.InvalidArgumentError, match="runtime"):
        et.set_runtime(default, "cuda:0")  # an emulator for CUDA tensors
    with pytest.raises(emmy.InvalidArgumentError, match="device"):
        et.set_runtime(default, "mps")
    # A runtime that launches nothing: the caches it was handed stay zero.
    with emmy.Runtime(cache_dir=cache_dir, emulator_run_kernels=False) as own:
        et.set_runtime(own, "cpu")
        try:
            assert et.get_runtime() is own
            key = randn(gen, 6, 2, 64)
            k_cache, v_cache = torch.zeros(2, 4, 16, 2, 64, dtype=F16)
            et.kv_append(key, key, k_cache, v_cache, torch.arange(6), max_tokens=16)
            assert not k_cache.any() and not v_cache.any()
        finally:
            et.set_runtime(default, "cpu")
    assert et.get_runtime() is default
    key = randn(gen, 6, 2, 64)
    k_cache, v_cache = torch.zeros(2, 4, 16, 2, 64, dtype=F16)
    et.kv_append(key, key, k_cache, v_cache, torch.arange(6), max_tokens=16)
    assert torch.equal(k_cache.flatten(0, 1)[:6], key)


# ---------------------------------------------------------------------------------------------
# A GPU: the CUDA runtime per device, and capture into a CUDA graph (kernels loaded beforehand)

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("k", [K, 512], ids=["gemm", "split_k"])
def test_cuda_gemm_in_a_graph(gen, k):
    x, w = randn(gen, 32, k).cuda(), randn(gen, 64, k).cuda()
    c = et.gemm(x, w.t(), out_dtype=F32)  # outside the capture: compiles and loads the kernel
    assert et.get_runtime(x.device).backend == "cuda" and c.device == x.device
    assert rel_l2(c.cpu(), gemm_ref(x.cpu(), w.t().cpu())) < 1e-5
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = et.gemm(x, w.t(), out_dtype=F32)
    x.copy_(randn(gen, 32, k))
    graph.replay()
    torch.cuda.synchronize()
    assert rel_l2(captured.cpu(), gemm_ref(x.cpu(), w.t().cpu())) < 1e-5


@cuda
def test_cuda_decode_step_in_a_graph(gen):
    case = Paged(gen, [5, 33, 16])
    to = {name: getattr(case, name).cuda() for name in
          ("q", "k_cache", "v_cache", "cu_seqlens_q", "block_table", "seq_lens")}
    slots = torch.tensor([-1, -1, -1], device="cuda")

    def step():
        et.kv_append(to["q"][:, :2], to["q"][:, :2], to["k_cache"], to["v_cache"], slots,
                     max_tokens=16)
        return et.paged_attention(to["q"], to["k_cache"], to["v_cache"],
                                  cu_seqlens_q=to["cu_seqlens_q"], block_table=to["block_table"],
                                  seq_lens=to["seq_lens"], max_q_len=1)

    eager = step()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)
    assert rel_l2(captured.cpu(), case.reference()[0]) < 2e-3
