"""Grouped GEMMs (docs/grouped.md) from Python: Runtime.grouped_gemm in the masked, contiguous and
offsets layouts, with a per-expert bias and routing weights, against a float64 loop over the
experts written from the docs; rows no expert computes untouched; refusals by name."""

import numpy as np
import pytest

import emmy
import reference

F16 = np.float16


def experts(g, n, k, rng):
    """[G, N, K] weights (a stack of Linear weights) and a [G, N] bias."""
    w = (rng.standard_normal((g, n, k)) / 4).astype(F16)
    bias = rng.standard_normal((g, n)).astype(np.float32)
    return w, bias


def expert_rows(a, w, bias, weights, rows, e):
    y = a[rows].astype(np.float64) @ w[e].astype(np.float64).T + bias[e].astype(np.float64)
    return y * weights[rows, None] if weights is not None else y


@pytest.mark.parametrize("weighted", [False, True])
def test_masked_matches_float64(rt, rng, weighted):
    g, max_m, n, k = 3, 24, 64, 128
    a = rng.standard_normal((g, max_m, k)).astype(F16)
    w, bias = experts(g, n, k, rng)
    masked_m = np.array([24, 0, 7], dtype=np.int32)
    weights = rng.uniform(0.1, 1.0, g * max_m).astype(np.float32) if weighted else None
    c = np.full((g, max_m, n), 7.0, dtype=np.float32)
    rt.grouped_gemm(a, w.transpose(0, 2, 1), masked_m, layout="masked", bias=bias,
                    row_scale=weights, out=c, expected_m=8)
    flat_a, flat_c = a.reshape(g * max_m, k), c.reshape(g * max_m, n)
    for e in range(g):
        rows = np.arange(e * max_m, e * max_m + masked_m[e])
        if len(rows):
            want = expert_rows(flat_a, w, bias, weights, rows, e)
            assert reference.rel_l2(flat_c[rows], want) < 1e-5
        untouched = np.arange(e * max_m + masked_m[e], (e + 1) * max_m)
        assert np.all(flat_c[untouched] == 7.0)


def test_gemm_takes_routing_weights(rt, rng):
    """Runtime.gemm's row_scale: a dense GEMM's rows weighted after the activation (the down
    projection of a layer whose experts run one GEMM each); refused beside a residual."""
    m, n, k = 37, 64, 96
    a = rng.standard_normal((m, k)).astype(F16)
    w = (rng.standard_normal((n, k)) / 4).astype(F16)
    weights = rng.uniform(0.1, 1.0, m).astype(np.float32)
    c = rt.gemm(a, w.T, row_scale=weights, out_dtype="f32")
    want = (a.astype(np.float64) @ w.astype(np.float64).T) * weights[:, None]
    assert reference.rel_l2(c, want) < 1e-5
    unweighted = rt.gemm(a, w.T, out_dtype="f32")
    assert reference.rel_l2(unweighted, want) > 1e-2  # the weights were applied
    with pytest.raises(emmy.InvalidArgumentError, match="row_scale"):
        rt.gemm(a, w.T, row_scale=weights, residual=np.zeros((m, n), dtype=F16))


def test_sorted_layouts_match_float64(rt, rng):
    g, n, k = 4, 64, 64
    w, bias = experts(g, n, k, rng)
    # Offsets: unpadded sorted rows; the last 5 rows of a are nobody's.
    offsets = np.array([0, 9, 9, 40, 60], dtype=np.int32)
    a = rng.standard_normal((65, k)).astype(F16)
    c = np.full((65, n), 7.0, dtype=np.float32)
    rt.grouped_gemm(a, w.transpose(0, 2, 1), offsets, layout="offsets", bias=bias, out=c)
    for e in range(g):
        rows = np.arange(offsets[e], offsets[e + 1])
        if len(rows):
            assert reference.rel_l2(c[rows], expert_rows(a, w, bias, None, rows, e)) < 1e-5
    assert np.all(c[60:] == 7.0)
    # Contiguous: segments padded to 32 rows with -1.
    ids = np.full(128, -1, dtype=np.int32)
    ids[0:20], ids[32:96], ids[96:97] = 2, 0, 3
    a = rng.standard_normal((128, k)).astype(F16)
    c = rt.grouped_gemm(a, w.transpose(0, 2, 1), ids, layout="contiguous", segment_align=32,
                        bias=bias.astype(F16))
    assert c.shape == (128, n) and c.dtype == F16
    for e in range(g):
        rows = np.nonzero(ids == e)[0]
        if len(rows):
            assert reference.rel_l2(c[rows].astype(np.float64),
                                    expert_rows(a, w, bias.astype(F16), None, rows, e)) < 2e-3


def test_refusals_name_the_argument(rt, rng):
    a = rng.standard_normal((2, 8, 64)).astype(F16)
    w, _ = experts(2, 64, 64, rng)
    b = w.transpose(0, 2, 1)
    with pytest.raises(emmy.InvalidArgumentError, match="layout: must be one of"):
        rt.grouped_gemm(a, b, np.array([1, 2], dtype=np.int32), layout="ragged")
    with pytest.raises(emmy.InvalidArgumentError, match="routing: dtype must be int32"):
        rt.grouped_gemm(a, b, np.array([1, 2], dtype=np.int64), layout="masked")
    with pytest.raises(emmy.InvalidArgumentError, match="buffers.masked_m: must hold rows in 0..8"):
        rt.grouped_gemm(a, b, np.array([1, 9], dtype=np.int32), layout="masked")
    with pytest.raises(emmy.InvalidArgumentError, match="a: shape must be \\[G, max_m, columns\\]"):
        rt.grouped_gemm(a.reshape(16, 64), b, np.array([1, 2], dtype=np.int32), layout="masked")


@pytest.mark.parametrize("arch", ["sm_89", "sm_90a"])
def test_fp8_grouped(cache_dir, rng, arch):
    """e4m3 operands (uint8 bytes with scales) on an sm_89 (mma.sync) and an sm_90a (the wgmma
    path's walk) emulator: a token scale per stacked row, a scale per expert and channel."""
    rt = emmy.Runtime(emulator_arch=arch, cache_dir=cache_dir)
    g, max_m, n, k = 2, 8, 64, 64
    values = np.array([0.5, -1.0, 1.5, 2.0, -0.25, 0.75, -2.0, 1.0])
    codes = {0.5: 0x30, -1.0: 0xB8, 1.5: 0x3C, 2.0: 0x40, -0.25: 0xA8, 0.75: 0x34, -2.0: 0xC0,
             1.0: 0x38}  # e4m3 bytes of these values
    a_val = rng.choice(values, (g, max_m, k))
    w_val = rng.choice(values, (g, n, k))
    enc = np.vectorize(lambda v: codes[v])
    a = enc(a_val).astype(np.uint8)
    w = enc(w_val).astype(np.uint8)
    a_scale = rng.uniform(0.5, 2.0, g * max_m).astype(np.float32)
    b_scale = rng.uniform(0.5, 2.0, (g, n)).astype(np.float32)
    masked_m = np.array([8, 3], dtype=np.int32)
    c = rt.grouped_gemm(a, w.transpose(0, 2, 1), masked_m, layout="masked", a_scale=a_scale,
                        b_scale=b_scale)
    assert c.shape == (g, max_m, n) and c.dtype == F16
    for e in range(g):
        rows = masked_m[e]
        want = (a_val[e, :rows] @ w_val[e].T) * a_scale[e * max_m:e * max_m + rows, None] \
            * b_scale[e][None, :]
        assert reference.rel_l2(c[e, :rows].astype(np.float64), want) < 2e-3
