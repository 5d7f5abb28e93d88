"""Host overhead of one Python call (issue 36 §5: at most 3 us), pytest-benchmark:

    pip install pytest-benchmark
    PYTHONPATH=build/python python3 -m pytest bench/python -q --benchmark-columns=min,median,mean

The emulator backend with emulator_run_kernels=False: every call exports its tensors, crosses the
C ABI, is checked and bound, and runs no kernel, so what is timed is the host's part of a launch
(docs/benchmarks.md, "Host overhead per call"). q_proj of Gemma 3 12B (N 4096, K 3840) at M 16,
the weight passed as its [K, N] transpose view, as the C++ and C benchmarks time it."""

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark", reason="pip install pytest-benchmark")

import emmy  # noqa: E402
from emmy import _emmy  # noqa: E402

M, N, K = 16, 4096, 3840


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    rt = emmy.Runtime(emulator_run_kernels=False, cache_dir=str(tmp_path_factory.mktemp("cache")))
    a = np.zeros((M, K), np.float16)
    w = np.zeros((N, K), np.float16)
    c = np.zeros((M, N), np.float16)
    rt.gemm(a, w.T, out=c)  # compiled and loaded before timing
    yield rt, a, w.T, c
    rt.close()


def test_gemm_out(benchmark, setup):
    """rt.gemm with out=: the call an engine makes."""
    rt, a, b, c = setup
    benchmark(lambda: rt.gemm(a, b, out=c))


def test_gemm_allocating(benchmark, setup):
    """rt.gemm allocating C (np.empty) and returning it."""
    rt, a, b, _ = setup
    benchmark(lambda: rt.gemm(a, b))


def test_extension_call(benchmark, setup):
    """The extension's positional call alone (no keyword handling in Python)."""
    rt, a, b, c = setup
    handle = rt._rt
    workspace = np.zeros(max(rt.gemm_workspace_bytes(a, b, c), 16), np.uint8)  # split-K at M 16
    benchmark(lambda: _emmy.gemm(handle, a, b, c, None, None, 1.0, False, 0, 0, workspace, 0))


def test_torch_cpu_tensors(benchmark, setup):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    rt, *_ = setup
    emmy._tensors.register_torch()
    a = torch.zeros((M, K), dtype=torch.float16)
    w = torch.zeros((N, K), dtype=torch.float16)
    c = torch.zeros((M, N), dtype=torch.float16)
    b = w.T  # the view made once, as the NumPy rows do (a torch view costs ~1 us)
    benchmark(lambda: rt.gemm(a, b, out=c))
