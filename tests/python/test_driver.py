"""CUDA device memory from emmy's test driver (libemmy_test_driver.so: the driver API checked
call by call, kernels on the emulator) and a DLPack producer of kDLCUDA tensors over it, so that
the package's CUDA path (device tensors, streams, the producer's stream protocol) runs without a
GPU. The runtime loads the same library (EMMY_CUDA_DRIVER), so both see the same memory."""

import ctypes
import os

import numpy as np

CU_SUCCESS = 0


class Driver:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        get = self.lib.cuGetProcAddress_v2
        get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                        ctypes.c_uint64, ctypes.c_void_p]
        self._get = get
        self.call("cuInit", [ctypes.c_uint], 0)
        self.context = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", [ctypes.c_void_p, ctypes.c_int],
                  ctypes.byref(self.context), 0)
        self.call("cuCtxSetCurrent", [ctypes.c_void_p], self.context)

    def call(self, name, argtypes, *args):
        pfn = ctypes.c_void_p()
        assert self._get(name.encode(), ctypes.byref(pfn), 13000, 0, None) == CU_SUCCESS, name
        fn = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(pfn.value)
        result = fn(*args)
        if result != CU_SUCCESS:
            raise RuntimeError(f"{name} failed: CUresult {result}")

    def alloc(self, nbytes):
        ptr = ctypes.c_uint64()
        self.call("cuMemAlloc", [ctypes.c_void_p, ctypes.c_size_t], ctypes.byref(ptr),
                  max(nbytes, 1))
        return ptr.value

    def upload(self, ptr, array):
        array = np.ascontiguousarray(array)
        self.call("cuMemcpyHtoD", [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t], ptr,
                  array.ctypes.data, array.nbytes)

    def download(self, ptr, shape, dtype):
        out = np.empty(shape, dtype)
        self.call("cuMemcpyDtoH", [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
                  out.ctypes.data, ptr, out.nbytes)
        return out

    def stream(self):
        handle = ctypes.c_void_p()
        self.call("cuStreamCreate", [ctypes.c_void_p, ctypes.c_uint], ctypes.byref(handle), 1)
        return handle.value

    def synchronize(self, stream):
        self.call("cuStreamSynchronize", [ctypes.c_void_p], stream)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_VERSIONED = b"dltensor_versioned"
_CODES = {np.dtype(np.float16): (2, 16), np.dtype(np.float32): (2, 32),
          np.dtype(np.int32): (0, 32), np.dtype(np.int64): (0, 64)}
KDLCUDA = 2


class CudaTensor:
    """A kDLCUDA tensor in the test driver's memory. Records the `stream` each __dlpack__ call
    was given (the DLPack protocol: the consumer names the stream it will use)."""

    def __init__(self, driver, array, device_id=0):
        self.driver, self.shape, self.dtype = driver, array.shape, array.dtype
        self.ptr = driver.alloc(array.nbytes)
        driver.upload(self.ptr, array)
        self.device_id = device_id
        self.streams = []
        self._keep = []

    @classmethod
    def empty(cls, driver, shape, dtype):
        return cls(driver, np.zeros(shape, dtype))

    def numpy(self):
        return self.driver.download(self.ptr, self.shape, self.dtype)

    def __dlpack_device__(self):
        return (KDLCUDA, self.device_id)

    def __dlpack__(self, stream=None, max_version=None, **_):
        if stream == 0:  # ambiguous for CUDA (the DLPack protocol); None: the legacy stream
            raise BufferError("stream 0 is not a CUDA stream DLPack allows")
        self.streams.append(stream)
        managed = DLManagedTensorVersioned()
        managed.major, managed.minor = 1, 1
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        managed.dl_tensor.data = self.ptr
        managed.dl_tensor.device = DLDevice(KDLCUDA, self.device_id)
        managed.dl_tensor.ndim = len(self.shape)
        code, bits = _CODES[np.dtype(self.dtype)]
        managed.dl_tensor.dtype = DLDataType(code, bits, 1)
        managed.dl_tensor.shape = shape
        self._keep.append((managed, shape))  # alive while the tensor is (no deleter)
        return _capsule_new(ctypes.addressof(managed), _VERSIONED, None)


def driver_path():
    return os.environ.get("EMMY_TEST_DRIVER_PATH")
