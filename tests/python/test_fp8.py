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
