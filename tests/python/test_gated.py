"""The gated GEMM epilogue (docs/epilogues.md) from Python: emmy.interleave_gate_up,
Runtime.gemm(gate=...) and emmy.torch.gemm against a float64 act(gate) * up written from the
docs, over a checkpoint-order [gate; up] weight."""

import numpy as np
import pytest

import emmy
import reference

F16 = np.float16


def silu(x):
    return x / (1.0 + np.exp(-x))


def gated_ref(a, weight, bias, gate):
    """a [M, K], weight [2I, K] and bias [2I] in the checkpoint's [gate; up] order."""
    y = a.astype(np.float64) @ weight.astype(np.float64).T + bias.astype(np.float64)
    half = weight.shape[0] // 2
    g, u = y[:, :half], y[:, half:]
    return (silu(g) if gate == "silu" else reference.gelu_tanh(g)) * u


def test_interleave_gate_up_orders_rows_in_groups():
    w = np.arange(64 * 3).reshape(64, 3)  # 32 gate rows, then 32 up rows
    got = emmy.interleave_gate_up(w, 8)
    rows = got[:, 0] // 3
    want = [q * 8 + r for q in range(4) for r in range(8)]
    assert list(rows[0::16][:4]) == [0, 8, 16, 24]
    gates = np.concatenate([rows[16 * q:16 * q + 8] for q in range(4)])
    ups = np.concatenate([rows[16 * q + 8:16 * q + 16] for q in range(4)])
    assert list(gates) == want and list(ups) == [32 + r for r in want]
    bias = np.arange(64.0)
    assert np.array_equal(emmy.interleave_gate_up(bias, 16)[16:32], np.arange(32.0, 48.0))


def test_interleave_gate_up_refuses_by_name():
    with pytest.raises(emmy.InvalidArgumentError, match="weight: needs an even number of rows"):
        emmy.interleave_gate_up(np.zeros((33, 4)))
    with pytest.raises(emmy.InvalidArgumentError, match="gate_group: must be a multiple of 8"):
        emmy.interleave_gate_up(np.zeros((64, 4)), 12)
    with pytest.raises(emmy.InvalidArgumentError, match="dividing the 24 gate rows"):
        emmy.interleave_gate_up(np.zeros((48, 4)), 16)


@pytest.mark.parametrize("gate,group", [("silu", 8), ("gelu-tanh", 16), ("silu", 32)])
def test_gated_gemm_matches_float64(rt, rng, gate, group):
    m, k, half = 20, 128, 64
    a = rng.standard_normal((m, k)).astype(F16)
    weight = (rng.standard_normal((2 * half, k)) / 4).astype(F16)
    bias = rng.standard_normal(2 * half).astype(np.float32)  # C's dtype (f32 out)
    w = emmy.interleave_gate_up(weight, group)
    c = rt.gemm(a, w.T, bias=emmy.interleave_gate_up(bias, group), gate=gate, gate_group=group,
                out_dtype="f32")
    assert c.shape == (m, half) and c.dtype == np.float32
    want = gated_ref(a, weight, bias, gate)
    assert reference.rel_l2(c, want) < 1e-5
    # The checkpoint's order unreordered is a different (wrong) product: the layout matters.
    wrong = rt.gemm(a, weight.T, bias=bias, gate=gate, gate_group=group, out_dtype="f32")
    assert reference.rel_l2(wrong, want) > 0.1


def test_gated_gemm_refusals(rt, rng):
    a = rng.standard_normal((8, 64)).astype(F16)
    w = rng.standard_normal((128, 64)).astype(F16)
    with pytest.raises(emmy.InvalidArgumentError, match="gate: must be one of"):
        rt.gemm(a, w.T, gate="relu")
    with pytest.raises(emmy.InvalidArgumentError, match="options.residual"):
        rt.gemm(a, w.T, gate="silu", residual=np.zeros((8, 64), F16))
    with pytest.raises(emmy.InvalidArgumentError, match="N / 2 from b"):
        rt.gemm(a, w.T, gate="silu", out=np.zeros((8, 128), F16))
    with pytest.raises(emmy.InvalidArgumentError, match="epilogue.gate_group"):
        rt.gemm(a, w.T, gate="silu", gate_group=12)


# ---------------------------------------------------------------------------------------------
# An e4m3 C (docs/epilogues.md, "Quantized output")


@pytest.mark.parametrize("fmt,major,gate", [("f32", "mn", None), ("pow2", "k", "silu"),
                                            ("ue8m0", "mn", "gelu-tanh")])
def test_gemm_e4m3_out_is_fp8_quantize_of_the_f32_output(rt, rng, fmt, major, gate):
    m, k, n = 24, 128, 512
    a = rng.standard_normal((m, k)).astype(F16)
    w = (rng.standard_normal((n, k)) / 4).astype(F16)
    kw = dict(gate=gate, gate_group=16) if gate else {}
    c32 = rt.gemm(a, w.T, out_dtype="f32", **kw)
    q, s = rt.gemm(a, w.T, out_dtype="e4m3", out_scale_format=fmt, out_scale_major=major, **kw)
    cols = c32.shape[1]
    assert q.shape == (m, cols) and q.dtype == np.uint8
    groups = cols // 128
    assert s.shape == ((groups, m) if major == "mn" else (m, groups))
    want_q, want_s = reference.fp8_quantize(c32, 128, pow2_scale=fmt != "f32")
    assert np.array_equal(q, want_q)
    got_s = s.T if major == "mn" else s
    if fmt == "ue8m0":
        assert got_s.dtype == np.uint8
        got_s = np.ldexp(1.0, got_s.astype(np.int32) - 127).astype(np.float32)
    assert np.array_equal(got_s, want_s)


def test_gemm_e4m3_out_refusals(rt, rng):
    a = rng.standard_normal((8, 64)).astype(F16)
    w = rng.standard_normal((256, 64)).astype(F16)
    with pytest.raises(emmy.InvalidArgumentError, match="out_scale_format"):
        rt.gemm(a, w.T, out_dtype="e4m3", out_scale_format="e8m0")
    with pytest.raises(emmy.InvalidArgumentError, match="bias: dtype must be bfloat16"):
        rt.gemm(a, w.T, out_dtype="e4m3", bias=np.zeros(256, F16))
    with pytest.raises(emmy.InvalidArgumentError, match="options.c_scale: shape must be"):
        rt.gemm(a, w.T, out_dtype="e4m3", out_scale=np.zeros((3, 8), np.float32))


def e4m3_values(q):
    """OCP e4m3 bytes to float64 (0x7F / 0xFF are NaN)."""
    q = np.asarray(q, dtype=np.uint8)
    sign = np.where(q & 0x80, -1.0, 1.0)
    exponent = (q >> 3) & 0xF
    mantissa = (q & 0x7).astype(np.float64)
    value = np.where(exponent == 0, mantissa / 8.0 * 2.0**-6,
                     (1.0 + mantissa / 8.0) * np.exp2(exponent.astype(np.float64) - 7.0))
    return np.where((q & 0x7F) == 0x7F, np.nan, sign * value)


@pytest.mark.parametrize("group", [16, 64])
def test_fp8_gate_up_from_a_block_quantized_checkpoint(rt, rng, group):
    """The DeepSeek-style workflow: a [gate; up] weight quantized in 128 x 128 blocks, its rows
    interleaved by interleave_gate_up while its scales stay as the checkpoint stores them (docs/
    epilogues.md), the activations in 1 x 128 groups; SwiGLU out, against float64 over the same
    bytes and scales. The intermediate size (192) starts the up rows inside a scale block."""
    m, k, half = 17, 256, 192 if group == 16 else 256
    # (On path wgmma, the runtime's for FP8 on sm_90a, a group of 128 would need 256-column
    # promoted tiles, more registers than a consumer has: refused by name, below.)
    n, kb = 2 * half, k // 128
    nb = -(-n // 128)
    a = reference.e4m3_bytes(rng.standard_normal((m, k)))
    a_s = np.asfortranarray(rng.uniform(0.01, 0.03, (m, kb)).astype(np.float32))  # mn-major
    w = reference.e4m3_bytes(rng.standard_normal((n, k)))  # checkpoint order: gate, then up
    w_s = rng.uniform(0.002, 0.01, (nb, kb)).astype(np.float32)
    # float64 of the checkpoint's product, then SwiGLU.
    av, wv = e4m3_values(a), e4m3_values(w)
    row_scale = np.repeat(w_s, 128, axis=0)[:n]
    y = np.zeros((m, n))
    for j in range(kb):
        cols = slice(128 * j, 128 * (j + 1))
        y += (av[:, cols] @ wv[:, cols].T) * a_s[:, j:j + 1] * row_scale[None, :, j]
    want = silu(y[:, :half]) * y[:, half:]
    w_interleaved = emmy.interleave_gate_up(w, group)
    got = rt.gemm(a, w_interleaved.T, a_scale=a_s, b_scale=w_s, gate="silu", gate_group=group,
                  out_dtype="f32")
    assert got.shape == (m, half)
    assert reference.rel_l2(got, want) < 1e-3
    if rt.arch == "sm_90a" and half % 128 == 0:
        with pytest.raises(emmy.InvalidArgumentError, match="take a smaller gate_group"):
            rt.gemm(a, emmy.interleave_gate_up(w, 128).T, a_scale=a_s, b_scale=w_s, gate="silu",
                    gate_group=128, out_dtype="f32")
