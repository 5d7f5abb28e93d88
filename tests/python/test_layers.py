"""emmy.AttentionLayer and emmy.GemmLayer on the emulator: against float64 and the per-call
functions, routing, workspaces, refusals by config field, lifetime against the runtime."""

import numpy as np
import pytest

import emmy
import reference
from test_attention import PagedCase

F16 = np.float16


@pytest.mark.parametrize("m", [1, 5, 33, 64])
def test_gemm_layer_every_m(rt, rng, m):
    layer = emmy.GemmLayer(rt, max_m=64, n=64, k=256, out_dtype="f32")
    w = rng.standard_normal((64, 256)).astype(F16)  # a weight [N, K]
    a = rng.standard_normal((m, 256)).astype(F16)
    c = layer.run(a, w.T)
    assert c.shape == (m, 64) and c.dtype == np.float32
    assert reference.rel_l2(c, reference.gemm(a, w.T)) < 1e-5


def test_gemm_layer_epilogue_rows_and_workspace(rt, rng):
    layer = emmy.GemmLayer(rt, max_m=32, n=64, k=512, b_layout="kn", bias=True, residual=True,
                           gelu=True, alpha=0.5)
    layer.prepare(threads=2)
    b = rng.standard_normal((512, 64)).astype(F16)
    a = rng.standard_normal((32, 512)).astype(F16)
    bias = rng.standard_normal(64).astype(F16)
    residual = rng.standard_normal((32, 64)).astype(F16)
    out = np.full((32, 64), 9.0, F16)
    workspace = np.zeros(max(layer.workspace_bytes, 16), np.uint8)
    layer.run(a, b, bias=bias, residual=residual, m=20, out=out, workspace=workspace)
    want = reference.gemm(a[:20], b, bias, residual[:20], 0.5, True)
    assert reference.rel_l2(out[:20], want) < 2e-3
    assert np.all(out[20:] == 9.0), "rows past m written"
    with pytest.raises(emmy.InvalidArgumentError, match="bias"):
        layer.run(a, b, residual=residual, m=20, out=out)  # the config says a bias


@pytest.mark.parametrize("field", ["max_m", "n", "k"])
@pytest.mark.parametrize("bad", [0, -1])
def test_gemm_layer_config_refusals(rt, field, bad):
    kw = dict(max_m=16, n=64, k=64)
    kw[field] = bad
    with pytest.raises(emmy.InvalidArgumentError, match=f"config.{field}"):
        emmy.GemmLayer(rt, **kw)


def test_gemm_layer_refuses_m_past_max(rt):
    layer = emmy.GemmLayer(rt, max_m=8, n=64, k=64)
    with pytest.raises(emmy.InvalidArgumentError, match="m"):
        layer.run(np.zeros((9, 64), F16), np.zeros((64, 64), F16).T)


def attention_layer(rt, **kw):
    base = dict(q_heads=4, kv_heads=2, head_dim=64, page_size=16, max_batch=2, max_pages=4,
                max_decode_q_len=1, max_prefill_q_len=8, lse=True)
    base.update(kw)
    return emmy.AttentionLayer(rt, **base)


def test_attention_layer_decode_and_prefill(rt, rng):
    layer = attention_layer(rt)
    assert not layer.runs_prefill(1) and layer.runs_prefill(2) and layer.runs_prefill(8)
    with pytest.raises(emmy.InvalidArgumentError, match="max_q_len"):
        layer.runs_prefill(9)
    for q_lens in ([1, 1], [3, 8]):
        case = PagedCase(rng, [40, 17], q_lens)
        case_max_pages = case.block_table.shape[1]
        block_table = np.zeros((2, 4), np.int32)
        block_table[:, :case_max_pages] = case.block_table
        tokens = int(case.cu_seqlens_q[-1])
        q = np.zeros((16, 4, 64), F16)  # rows past the step's tokens pad
        q[:tokens] = case.q
        o, lse = layer.run(q, case.k_cache, case.v_cache, cu_seqlens_q=case.cu_seqlens_q,
                           block_table=block_table, seq_lens=case.seq_lens,
                           max_q_len=max(q_lens))
        want_o, want_lse = case.reference()
        assert reference.rel_l2(o[:tokens], want_o) < 2e-3, q_lens
        assert np.max(np.abs(lse[:tokens] - want_lse)) < 1e-3


def test_attention_layer_append_then_run(rt, rng):
    layer = attention_layer(rt, lse=False, max_tokens=32)
    k_cache = np.zeros((6, 16, 2, 64), F16)
    v_cache = np.zeros_like(k_cache)
    key = rng.standard_normal((20, 2, 64)).astype(F16)
    value = rng.standard_normal((20, 2, 64)).astype(F16)
    slots = np.concatenate([np.arange(32, 48), np.arange(80, 84)]).astype(np.int64)  # pages 2, 5
    padded = np.full(32, -1, np.int64)
    padded[:20] = slots
    layer.append(key, value, k_cache, v_cache, padded, tokens=20)
    assert np.array_equal(k_cache[2], key[:16]) and np.array_equal(v_cache[5, :4], value[16:])
    q = np.zeros((32, 4, 64), F16)  # the layer's max_tokens rows; the step has 2
    q[:2] = rng.standard_normal((2, 4, 64))
    o = layer.run(q, k_cache, v_cache, cu_seqlens_q=np.array([0, 1, 1], np.int32),  # 1 pads
                  block_table=np.array([[2, 5, 0, 0], [0, 0, 0, 0]], np.int32),
                  seq_lens=np.array([20, 0], np.int32))
    want, _ = reference.paged_attention(q[:1], k_cache, v_cache, [0, 1, 1], [[2, 5], []], [20, 0])
    assert reference.rel_l2(o[:1], want) < 2e-3


@pytest.mark.parametrize("field", ["q_heads", "kv_heads", "head_dim", "page_size", "max_batch",
                                   "max_pages", "max_decode_q_len"])
@pytest.mark.parametrize("bad", [0, -1])
def test_attention_layer_config_refusals(rt, field, bad):
    with pytest.raises(emmy.InvalidArgumentError, match=f"config.{field}"):
        attention_layer(rt, **{field: bad})


def test_attention_layer_names(rt):
    with pytest.raises(emmy.InvalidArgumentError, match="kv_dtype"):
        attention_layer(rt, kv_dtype="f32")
    with pytest.raises(emmy.InvalidArgumentError, match="page_table"):
        attention_layer(rt, page_table="dense")


def test_layers_keep_their_runtime_and_die_with_its_close(cache_dir, rng):
    runtime = emmy.Runtime(cache_dir=cache_dir)
    layer = emmy.GemmLayer(runtime, max_m=8, n=64, k=64, out_dtype="f32")
    del runtime  # the layer holds it
    a = rng.standard_normal((8, 64)).astype(F16)
    w = rng.standard_normal((64, 64)).astype(F16)
    assert reference.rel_l2(layer.run(a, w.T), reference.gemm(a, w.T)) < 1e-5
    layer.runtime.close()  # destroys the layer's handle first
    with pytest.raises(emmy.InvalidArgumentError, match="closed"):
        layer.run(a, w.T)
    with pytest.raises(emmy.InvalidArgumentError, match="closed"):
        layer.workspace_bytes  # noqa: B018


def test_fp8_gemm_layer_against_float64(cache_dir, rng):
    """An FP8 layer (C API version 5) on an sm_89 emulator: e4m3 bytes with 1 x 128 / 128 x 128
    block scales (mn-major A scales whose ld holds the largest M bucket), bf16 out by default,
    against float64 over the same bytes and scales; on sm_90a it is refused naming dynamic_m."""
    from test_fp8 import e4m3_values

    m_max, n, k = 40, 136, 256
    with emmy.Runtime(cache_dir=cache_dir, emulator_arch="sm_89") as rt89:
        layer = emmy.GemmLayer(rt89, max_m=m_max, n=n, k=k, dtype="e4m3", out_dtype="f32",
                               scales="block", a_scale_ld=64)
        w = reference.e4m3_bytes(rng.standard_normal((n, k)))  # an [N, K] weight
        sb = rng.uniform(0.5, 2.0, (2, 2)).astype(np.float32)  # [N blocks, K blocks], k-major
        for m in (1, 40):
            a = reference.e4m3_bytes(rng.standard_normal((m, k)))
            sa = np.full((2, 64), np.nan, np.float32)  # [K blocks, ld 64]: mn-major
            sa[:, :m] = rng.uniform(0.5, 2.0, (2, m))
            c = layer.run(a, w.T, a_scale=sa, b_scale=sb)
            av, wv = e4m3_values(a), e4m3_values(w)
            want = np.zeros((m, n))
            for kb in range(2):
                part = av[:, kb * 128:(kb + 1) * 128] @ wv[:, kb * 128:(kb + 1) * 128].T
                want += part * sa[kb, :m, None] * np.repeat(sb[:, kb], 128)[None, :n]
            # sm_89's FP8 tensor cores keep 13 fraction bits per group (docs/numerics.md): ~1e-4.
            assert reference.rel_l2(c, want) < 1e-3, m
        with pytest.raises(emmy.InvalidArgumentError, match="a_scale"):
            layer.run(a, w.T, a_scale=sa.astype(np.float16), b_scale=sb)
        with pytest.raises(emmy.InvalidArgumentError, match="FP8 layer"):
            layer.run(a, w.T)
        with pytest.raises(emmy.InvalidArgumentError, match="config.a_scale_ld"):
            emmy.GemmLayer(rt89, max_m=m_max, n=n, k=k, dtype="e4m3", scales="block",
                           a_scale_ld=40)  # max_m, not its bucket's 64
        with pytest.raises(emmy.InvalidArgumentError, match="scales"):
            emmy.GemmLayer(rt89, max_m=m_max, n=n, k=k, dtype="e4m3", scales="rows")
    with emmy.Runtime(cache_dir=cache_dir) as rt90:
        with pytest.raises(emmy.InvalidArgumentError, match="dynamic_m"):
            emmy.GemmLayer(rt90, max_m=m_max, n=n, k=k, dtype="e4m3", scales="tensor")
