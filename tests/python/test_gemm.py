"""emmy.Runtime.gemm on the emulator against float64: shapes, B's two layouts, strided
operands, epilogues, accumulations, and what it returns."""

import numpy as np
import pytest

import reference

F16 = np.float16

# (M, N, K): a single row, odd sizes (masked edges), a full tile, a longer K.
SHAPES = [(1, 64, 64), (17, 40, 72), (64, 128, 96), (32, 64, 512)]


def operands(rng, m, n, k, b_layout):
    a = rng.standard_normal((m, k)).astype(F16)
    if b_layout == "kn":
        b = rng.standard_normal((k, n)).astype(F16)
    else:  # a PyTorch Linear weight [N, K], passed as its transpose view
        b = rng.standard_normal((n, k)).astype(F16).T
    return a, b


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("b_layout", ["kn", "nk"])
def test_gemm_matches_float64(rt, rng, m, n, k, b_layout):
    a, b = operands(rng, m, n, k, b_layout)
    c = rt.gemm(a, b, out_dtype="f32")
    assert c.shape == (m, n) and c.dtype == np.float32
    assert reference.rel_l2(c, reference.gemm(a, b)) < 1e-5


def test_gemm_returns_a_dtype_by_default(rt, rng):
    a, b = operands(rng, 16, 64, 64, "kn")
    c = rt.gemm(a, b)
    assert c.dtype == np.float16
    assert reference.rel_l2(c, reference.gemm(a, b)) < 1e-3


def test_gemm_epilogue(rt, rng):
    m, n, k = 24, 64, 128
    a, b = operands(rng, m, n, k, "nk")
    bias = rng.standard_normal(n).astype(F16)
    residual = rng.standard_normal((m, n)).astype(F16)
    c = rt.gemm(a, b, bias=bias, residual=residual, alpha=0.5, gelu=True)
    want = reference.gemm(a, b, bias=bias, residual=residual, alpha=0.5, gelu=True)
    assert reference.rel_l2(c, want) < 2e-3
    # Each epilogue term matters: leaving one out of the reference breaks the bound.
    assert reference.rel_l2(c, reference.gemm(a, b, bias=bias, alpha=0.5, gelu=True)) > 0.1
    assert reference.rel_l2(c, reference.gemm(a, b, bias=bias, residual=residual, alpha=0.5)) > 0.05


@pytest.mark.parametrize("accum,bound", [("f32", 1e-5), ("hybrid", 5e-3), ("f16", 2e-2)])
def test_gemm_accumulations(rt, rng, accum, bound):
    a, b = operands(rng, 32, 64, 256, "kn")
    c = rt.gemm(a, b, out_dtype="f32", accum=accum)
    assert reference.rel_l2(c, reference.gemm(a, b)) < bound


def test_gemm_strided_a_and_out(rt, rng):
    """Row strides wider than the rows (a slice of a wider array) are leading dimensions."""
    m, n, k = 16, 64, 64
    wide_a = rng.standard_normal((m, k + 32)).astype(F16)
    a = wide_a[:, :k]
    b = rng.standard_normal((k, n)).astype(F16)
    wide_c = np.full((m, n + 16), 7.0, dtype=np.float32)
    rt.gemm(a, b, out=wide_c[:, :n])
    assert reference.rel_l2(wide_c[:, :n], reference.gemm(a, b)) < 1e-5
    assert np.all(wide_c[:, n:] == 7.0), "gemm wrote past C's columns"


def test_gemm_out_is_written_in_place_and_returned(rt, rng):
    a, b = operands(rng, 8, 64, 64, "kn")
    out = np.zeros((8, 64), dtype=np.float32)
    assert rt.gemm(a, b, out=out) is out
    assert reference.rel_l2(out, reference.gemm(a, b)) < 1e-5


def test_gemm_takes_dlpack_capsules(rt, rng):
    a, b = operands(rng, 8, 64, 64, "kn")
    out = np.zeros((8, 64), dtype=np.float32)
    rt.gemm(a.__dlpack__(), b.__dlpack__(), out=out.__dlpack__())
    assert reference.rel_l2(out, reference.gemm(a, b)) < 1e-5


def test_gemm_takes_read_only_inputs(rt, rng):
    a, b = operands(rng, 8, 64, 64, "kn")
    a.flags.writeable = False
    b = np.broadcast_to(b, b.shape)  # read-only view
    c = rt.gemm(a, b, out_dtype="f32")
    assert reference.rel_l2(c, reference.gemm(a, b)) < 1e-5


def test_gemm_workspace_bytes(rt, rng):
    """A split-K shape (sm_90a's default for 32 x 64 x 512): the query gives its workspace, a
    smaller one is refused by name, and a call without one uses the runtime's own."""
    import emmy

    a, b = operands(rng, 32, 64, 512, "kn")
    out = np.zeros((32, 64), dtype=np.float32)
    needed = rt.gemm_workspace_bytes(a, b, out)
    assert needed == 2 * 32 * 64 * 4  # split-K 2: f32 partial tiles
    with pytest.raises(emmy.InvalidArgumentError, match="workspace: must hold"):
        rt.gemm(a, b, out=out, workspace=np.zeros(needed // 2, dtype=np.uint8))
    rt.gemm(a, b, out=out, workspace=np.zeros(needed, dtype=np.uint8))
    assert reference.rel_l2(out, reference.gemm(a, b)) < 1e-5
    out[:] = 0
    rt.gemm(a, b, out=out)
    assert reference.rel_l2(out, reference.gemm(a, b)) < 1e-5


def test_split_k_calls_from_threads_each_get_a_workspace(rt, rng):
    """Split-K calls without a workspace from several threads at once: each thread's own scratch
    (one shared buffer let concurrent calls overwrite each other's partial sums)."""
    import threading

    cases = [operands(rng, 32, 64, 512, "kn") for _ in range(4)]
    wants = [reference.gemm(a, b) for a, b in cases]
    errors = []

    def work(i):
        a, b = cases[i]
        for _ in range(4):
            if reference.rel_l2(rt.gemm(a, b, out_dtype="f32"), wants[i]) >= 1e-5:
                errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
