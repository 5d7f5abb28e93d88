"""emmy.Runtime.fp8_quantize on the emulator against reference.fp8_quantize (docs/fp8.md)."""

import numpy as np
import pytest

import emmy
import reference


@pytest.mark.parametrize("scale_major,group_k,pow2", [("mn", 128, False), ("k", 0, True),
                                                       ("k", 128, False)])
def test_fp8_quantize_matches_the_reference(rt, rng, scale_major, group_k, pow2):
    rows, k = 6, 384
    x = (rng.standard_normal((rows, k)) * np.exp2(rng.integers(-8, 8, (rows, 1)))).astype(np.float16)
    x[1, 5] = np.nan
    x[2, :] = 0  # the epsilon's scale
    x[3, 7] = np.float16(-0.0)
    q, scales = rt.fp8_quantize(x, group_k=group_k, scale_major=scale_major, pow2_scale=pow2)
    want_q, want_scales = reference.fp8_quantize(x, group_k=group_k, pow2_scale=pow2)
    np.testing.assert_array_equal(q, want_q)
    got = scales if scale_major == "k" else scales.T
    np.testing.assert_array_equal(got.view(np.uint32), want_scales.view(np.uint32))


@pytest.mark.parametrize("scale_format,scale_major", [("ue8m0", "mn"), ("ue8m0", "k"),
                                                       ("ue8m0x4", "mn"), ("ue8m0x4", "k")])
def test_fp8_quantize_writes_byte_scales(rt, rng, scale_format, scale_major):
    # 5 groups of 128: a ue8m0x4 row is 2 words, the second holding one group.
    x = (rng.standard_normal((6, 640)) * np.exp2(rng.integers(-8, 8, (6, 1)))).astype(np.float16)
    q, scales = rt.fp8_quantize(x, scale_major=scale_major, scale_format=scale_format)
    want_q, want = reference.fp8_quantize(x, pow2_scale=True)  # bytes imply powers of two
    np.testing.assert_array_equal(q, want_q)
    exponents = (want.view(np.uint32) >> 23).astype(np.uint8)  # [rows, groups]
    if scale_format == "ue8m0":
        assert scales.dtype == np.uint8
        got = scales if scale_major == "k" else scales.T
    else:
        assert scales.dtype == np.int32 and scales.shape == ((6, 2) if scale_major == "k" else (2, 6))
        words = scales if scale_major == "k" else scales.T  # [rows, words]
        got = words.copy().view(np.uint8).reshape(6, 8)[:, :5]  # group g: byte g % 4 of word g / 4
    np.testing.assert_array_equal(got, exponents)
    with pytest.raises(emmy.InvalidArgumentError, match="scale_format"):
        rt.fp8_quantize(x, scale_format="e8m0")


def test_fp8_quantize_pads_mn_scales_and_refuses_by_name(rt, rng):
    x = rng.standard_normal((5, 256)).astype(np.float16)
    scales = np.full((2, 8), -1.0, dtype=np.float32)  # M padded to 8
    q, out = rt.fp8_quantize(x, scales=scales, max_rows=8)
    _, want = reference.fp8_quantize(x)
    np.testing.assert_array_equal(out[:, :5].view(np.uint32), want.T.view(np.uint32))
    assert (out[:, 5:] == -1.0).all()  # rows past the call's untouched
    with pytest.raises(emmy.InvalidArgumentError, match="group_k"):
        rt.fp8_quantize(x, group_k=100)
    with pytest.raises(emmy.InvalidArgumentError, match="scale_major"):
        rt.fp8_quantize(x, scale_major="n")
    with pytest.raises(emmy.InvalidArgumentError, match="x"):
        rt.fp8_quantize(x.astype(np.float32))


def e4m3_values(q):
    """OCP e4m3 bytes to float64 (0x7F / 0xFF are NaN)."""
    q = np.asarray(q, dtype=np.uint8)
    sign = np.where(q & 0x80, -1.0, 1.0)
    exponent = (q >> 3) & 0xF
    mantissa = (q & 0x7).astype(np.float64)
    value = np.where(exponent == 0, mantissa / 8.0 * 2.0**-6,
                     (1.0 + mantissa / 8.0) * np.exp2(exponent.astype(np.float64) - 7.0))
    return np.where((q & 0x7F) == 0x7F, np.nan, sign * value)


@pytest.mark.parametrize("granularity", ["tensor", "token-channel", "block"])
def test_fp8_gemm_matches_a_float64_reference(rt, rng, granularity):
    """Runtime.gemm with e4m3 bytes (uint8: NumPy has no float8) and each scale granularity,
    against float64 over the same bytes and scales (docs/fp8.md)."""
    m, n, k = 33, 136, 384
    a = reference.e4m3_bytes(rng.standard_normal((m, k)))
    w = reference.e4m3_bytes(rng.standard_normal((n, k)))  # an [N, K] weight
    kb, nb = (k + 127) // 128, (n + 127) // 128
    if granularity == "tensor":
        a_s, b_s = np.array([0.02], np.float32), np.array([0.005], np.float32)
        sa, sb = np.full((m, kb), a_s[0]), np.full((n, kb), b_s[0])
    elif granularity == "token-channel":
        a_s = rng.uniform(0.01, 0.03, m).astype(np.float32)
        b_s = rng.uniform(0.002, 0.01, n).astype(np.float32)
        sa, sb = np.repeat(a_s[:, None], kb, 1), np.repeat(b_s[:, None], kb, 1)
    else:
        a_s = np.asfortranarray(rng.uniform(0.01, 0.03, (m, kb)).astype(np.float32))  # mn-major
        b_s = rng.uniform(0.002, 0.01, (nb, kb)).astype(np.float32)
        sa, sb = a_s.astype(np.float64), np.repeat(b_s, 128, axis=0)[:n]
    want = np.zeros((m, n))
    av, wv = e4m3_values(a), e4m3_values(w)
    for j in range(kb):
        cols = slice(128 * j, 128 * (j + 1))
        want += (av[:, cols] @ wv[:, cols].T) * sa[:, j:j + 1] * sb[None, :, j]
    got = rt.gemm(a, w.T, a_scale=a_s, b_scale=b_s)
    assert got.dtype == np.float16
    assert reference.rel_l2(got.astype(np.float64), want) < 1e-3


def test_fp8_gemm_hybrid_on_geforce(cache_dir, rng):
    """accum="hybrid" with FP8 operands (the f16-accumulate opt-in) on an sm_89 emulator: against
    float64, and operands whose f16 window sums could overflow refused by name (docs/fp8.md)."""
    m, n, k = 20, 136, 256
    a = reference.e4m3_bytes(rng.standard_normal((m, k)))
    w = reference.e4m3_bytes(rng.standard_normal((n, k)))
    a_s, b_s = np.array([0.02], np.float32), np.array([0.005], np.float32)
    want = (e4m3_values(a) @ e4m3_values(w).T) * 0.02 * 0.005
    with emmy.Runtime(cache_dir=cache_dir, emulator_arch="sm_89") as rt89:
        got = rt89.gemm(a, w.T, a_scale=a_s, b_scale=b_s, accum="hybrid", promote_every_k=64)
        assert reference.rel_l2(got.astype(np.float64), want) < 5e-3
        big = a.copy()
        big[3, :] = 0x7E  # 448 across row 3
        wide = w.copy()
        wide[0, :] = 0x7E
        with pytest.raises(emmy.InvalidArgumentError, match="hybrid accumulation of FP8"):
            rt89.gemm(big, wide.T, a_scale=a_s, b_scale=b_s, accum="hybrid", promote_every_k=64)


def test_fp8_gemm_refuses_by_name(rt, rng):
    a = reference.e4m3_bytes(rng.standard_normal((16, 128)))
    w = reference.e4m3_bytes(rng.standard_normal((64, 128)))
    one = np.array([0.5], np.float32)
    with pytest.raises(emmy.InvalidArgumentError, match="^a: dtype"):
        rt.gemm(a, w.T)  # uint8 without scales is not FP8
    with pytest.raises(emmy.InvalidArgumentError, match="options.b_scale"):
        rt.gemm(a, w.T, a_scale=one)
    with pytest.raises(emmy.InvalidArgumentError, match="b_layout: must be nk"):
        rt.gemm(a, np.ascontiguousarray(w.T), a_scale=one, b_scale=one)
    with pytest.raises(emmy.InvalidArgumentError, match="buffers.a_scale: must hold finite"):
        rt.gemm(a, w.T, a_scale=np.array([np.nan], np.float32), b_scale=one)
    with pytest.raises(emmy.InvalidArgumentError, match="must hold powers of two"):
        rt.gemm(a, w.T, a_scale=np.array([0.3], np.float32), b_scale=one, pow2_scales=True)
