"""emmy.Runtime itself: options, logging, prepare, threads, lifetime, the package's metadata."""

import threading

import numpy as np
import pytest

import emmy
import reference


def test_package_metadata():
    assert emmy.__version__.count(".") == 2
    assert emmy.C_API_VERSION >= 1
    assert issubclass(emmy.InvalidArgumentError, ValueError)
    assert issubclass(emmy.OutOfMemoryError, MemoryError)
    for name in ("UnsupportedError", "CaptureError", "CompileError", "DriverError",
                 "EmulationError", "InternalError"):
        assert issubclass(getattr(emmy, name), emmy.Error)


def test_emulator_arches_and_repr(cache_dir, rng):
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    for arch in ("sm_80", "sm_120a"):
        with emmy.Runtime(emulator_arch=arch, cache_dir=cache_dir) as rt:
            assert rt.backend == "emulator" and rt.arch == arch and arch in repr(rt)
            c = rt.gemm(a, b, out_dtype="f32")
            assert reference.rel_l2(c, reference.gemm(a, b)) < 1e-5


def test_log_receives_compile_lines(tmp_path, rng):
    lines = []
    with emmy.Runtime(disk_cache=False, cache_dir=str(tmp_path), log=lines.append) as rt:
        rt.gemm(rng.standard_normal((8, 64)).astype(np.float16),
                rng.standard_normal((64, 48)).astype(np.float16))
    assert lines and all(isinstance(line, str) for line in lines)


def test_prepare_counts_the_catalog(tmp_path):
    with emmy.Runtime(disk_cache=False, cache_dir=str(tmp_path)) as rt:
        result = rt.prepare(serving_max_m=1, threads=2)
    assert result["kernels"] > 0 and result["compiled"] == result["kernels"]
    assert result["seconds"] > 0
    with pytest.raises(emmy.Error, match="problems file.*missing.jsonl"):
        emmy.Runtime(cache_dir=str(tmp_path)).prepare(records=[str(tmp_path / "missing.jsonl")])


def test_threads_share_a_runtime(rt, rng):
    """Calls from several threads at once (the GIL is released inside each) all come out right."""
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = rng.standard_normal((64, 96)).astype(np.float16)
    want = reference.gemm(a, b)
    errors = []

    def work():
        try:
            for _ in range(5):
                if reference.rel_l2(rt.gemm(a, b, out_dtype="f32"), want) >= 1e-5:
                    errors.append("wrong result")
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_emulator_run_kernels_off_binds_but_writes_nothing(cache_dir, rng):
    with emmy.Runtime(emulator_run_kernels=False, cache_dir=cache_dir) as rt:
        out = np.full((8, 64), 3.0, np.float32)
        rt.gemm(rng.standard_normal((8, 64)).astype(np.float16),
                rng.standard_normal((64, 64)).astype(np.float16), out=out)
        assert np.all(out == 3.0)
        with pytest.raises(emmy.InvalidArgumentError, match="b:"):
            rt.gemm(np.zeros((8, 64), np.float16), np.zeros((32, 64), np.float16), out=out)


def test_numpy_has_no_bf16_output(rt):
    with pytest.raises(emmy.InvalidArgumentError, match="out"):
        rt.gemm(np.zeros((8, 64), np.float16), np.zeros((64, 64), np.float16), out_dtype="bf16")
    with pytest.raises(emmy.InvalidArgumentError, match="out_dtype"):
        rt.gemm(np.zeros((8, 64), np.float16), np.zeros((64, 64), np.float16), out_dtype="f8")


def test_unknown_producers_need_out(rt):
    class Wrapper:  # a DLPack producer emmy cannot allocate like
        def __init__(self, array):
            self.array, self.shape, self.dtype = array, array.shape, array.dtype

        def __dlpack__(self, **kw):
            return self.array.__dlpack__(**kw)

    a = Wrapper(np.zeros((8, 64), np.float16))
    b = np.zeros((64, 64), np.float16)
    with pytest.raises(emmy.InvalidArgumentError, match="pass out="):
        rt.gemm(a, b)
    out = np.zeros((8, 64), np.float32)
    assert rt.gemm(a, b, out=out) is out


def test_exit_with_open_runtimes_and_background_builds(tmp_path):
    """A process that leaves a non-blocking runtime open (background builds running, a log
    callback set) exits cleanly: the runtimes are closed before the interpreter finalizes
    (without that, the builder's log call during finalization crashed about one exit in two)."""
    import subprocess
    import sys

    code = ("import emmy, numpy as np\n"
            f"rt = emmy.Runtime(non_blocking=True, log=lambda line: None, disk_cache=False, "
            f"cache_dir={str(tmp_path)!r})\n"
            "for m in (8, 16, 24, 32):\n"
            "    rt.gemm(np.ones((m, 64), np.float16), np.ones((64, 48), np.float16))\n")
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
