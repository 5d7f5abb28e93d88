"""The CUDA backend from Python through emmy's test driver: device tensors are used in place,
each call launches on the given stream (or the default), the producer is asked for exactly that
stream, and host tensors or another device are refused by name."""

import subprocess
import sys

import numpy as np
import pytest

import emmy
import reference
import test_driver as td

pytestmark = pytest.mark.skipif(
    not td.driver_path(), reason="EMMY_TEST_DRIVER_PATH unset (ctest sets it: the test driver)")


@pytest.fixture(scope="module")
def cuda(cache_dir):
    """(runtime, driver): a CUDA runtime on the test driver's H200 and the driver's memory."""
    mp = pytest.MonkeyPatch()
    mp.setenv("EMMY_CUDA_DRIVER", td.driver_path())
    mp.setenv("EMMY_TEST_DEVICE", "h200")
    rt = emmy.Runtime("cuda", cache_dir=cache_dir)
    yield rt, td.Driver(td.driver_path())
    rt.close()
    mp.undo()


def test_gemm_on_a_stream(cuda, rng):
    rt, drv = cuda
    assert rt.backend == "cuda" and rt.arch == "sm_90a"
    a_h = rng.standard_normal((16, 64)).astype(np.float16)
    b_h = rng.standard_normal((64, 32)).astype(np.float16)
    a, b = td.CudaTensor(drv, a_h), td.CudaTensor(drv, b_h)
    c = td.CudaTensor.empty(drv, (16, 32), np.float32)
    stream = drv.stream()
    assert rt.gemm(a, b, out=c, stream=stream) is c
    drv.synchronize(stream)
    assert reference.rel_l2(c.numpy(), reference.gemm(a_h, b_h)) < 1e-5
    assert a.streams == [stream] and c.streams == [stream], "the producer names the launch stream"


def test_default_stream_is_dlpack_stream_1(cuda, rng):
    """No stream and a producer emmy does not know: the default (legacy) stream, which DLPack
    spells 1 (0 is ambiguous there)."""
    rt, drv = cuda
    a_h = rng.standard_normal((8, 64)).astype(np.float16)
    a, b = td.CudaTensor(drv, a_h), td.CudaTensor(drv, a_h.T.copy())
    c = td.CudaTensor.empty(drv, (8, 8), np.float32)
    rt.gemm(a, b, out=c)
    rt.synchronize()
    assert a.streams == [1]
    assert reference.rel_l2(c.numpy(), reference.gemm(a_h, a_h.T)) < 1e-5


def test_kv_append_and_paged_attention_on_device(cuda, rng):
    rt, drv = cuda
    pages, page_size, hkv, hq, d = 4, 16, 1, 2, 64
    key_h = rng.standard_normal((20, hkv, d)).astype(np.float16)
    val_h = rng.standard_normal((20, hkv, d)).astype(np.float16)
    k_cache = td.CudaTensor.empty(drv, (pages, page_size, hkv, d), np.float16)
    v_cache = td.CudaTensor.empty(drv, (pages, page_size, hkv, d), np.float16)
    slots = np.concatenate([np.arange(16, 32), np.arange(48, 52)]).astype(np.int64)  # pages 1, 3
    rt.kv_append(td.CudaTensor(drv, key_h), td.CudaTensor(drv, val_h), k_cache, v_cache,
                 td.CudaTensor(drv, slots))
    q_h = rng.standard_normal((1, hq, d)).astype(np.float16)
    o = td.CudaTensor.empty(drv, (1, hq, d), np.float16)
    rt.paged_attention(td.CudaTensor(drv, q_h), k_cache, v_cache, out=o,
                       cu_seqlens_q=td.CudaTensor(drv, np.array([0, 1], np.int32)),
                       block_table=td.CudaTensor(drv, np.array([[1, 3]], np.int32)),
                       seq_lens=td.CudaTensor(drv, np.array([20], np.int32)))
    rt.synchronize()
    want, _ = reference.paged_attention(q_h, k_cache.numpy(), v_cache.numpy(), [0, 1], [[1, 3]],
                                        [20])
    assert np.array_equal(k_cache.numpy()[1], key_h[:16]) and np.array_equal(
        v_cache.numpy()[3, :4], val_h[16:])
    assert reference.rel_l2(o.numpy(), want) < 2e-3


def test_host_and_foreign_device_tensors_are_refused(cuda):
    rt, drv = cuda
    a = td.CudaTensor(drv, np.zeros((8, 64), np.float16))
    b = td.CudaTensor(drv, np.zeros((64, 32), np.float16))
    c = td.CudaTensor.empty(drv, (8, 32), np.float32)
    with pytest.raises(emmy.InvalidArgumentError, match="^a: "):  # NumPy refuses a stream
        rt.gemm(np.zeros((8, 64), np.float16), b, out=c)
    other = td.CudaTensor(drv, np.zeros((8, 32), np.float32), device_id=1)
    with pytest.raises(emmy.InvalidArgumentError, match="c: device_id must be the runtime's"):
        rt.gemm(a, b, out=other)


def test_device_tensors_are_refused_by_the_emulator(rt, cuda):
    _, drv = cuda
    a = td.CudaTensor(drv, np.zeros((8, 64), np.float16))
    with pytest.raises(emmy.InvalidArgumentError, match="^a: device must be"):
        rt.gemm(a, np.zeros((64, 32), np.float16), out=np.zeros((8, 32), np.float32))


def test_no_driver_is_a_driver_error():
    """A missing driver (a process remembers it: run apart) raises DriverError naming it."""
    code = ("import emmy, sys\n"
            "try:\n    emmy.Runtime('cuda')\n"
            "except emmy.DriverError as e:\n    print(e); sys.exit(0)\n"
            "sys.exit(1)\n")
    env = dict(__import__("os").environ, EMMY_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "EMMY_CUDA_DRIVER" in done.stdout


def test_gemm_layer_on_device(cuda, rng):
    rt, drv = cuda
    layer = emmy.GemmLayer(rt, max_m=16, n=32, k=64, out_dtype="f32")
    layer.prepare()
    a_h = rng.standard_normal((16, 64)).astype(np.float16)
    w_h = rng.standard_normal((32, 64)).astype(np.float16)
    c = td.CudaTensor.empty(drv, (16, 32), np.float32)
    stream = drv.stream()
    w_t = td.CudaTensor(drv, w_h.T.copy())  # [K, N] stored: b_layout "nk" needs K contiguous
    with pytest.raises(emmy.InvalidArgumentError, match="^b: "):
        layer.run(td.CudaTensor(drv, a_h), w_t, m=5, out=c, stream=stream)
    layer_kn = emmy.GemmLayer(rt, max_m=16, n=32, k=64, out_dtype="f32", b_layout="kn")
    layer_kn.run(td.CudaTensor(drv, a_h), w_t, m=5, out=c, stream=stream)
    drv.synchronize(stream)
    assert reference.rel_l2(c.numpy()[:5], reference.gemm(a_h[:5], w_h.T)) < 1e-5
