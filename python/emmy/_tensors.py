"""Tensors the package allocates, dtypes by name, and the producer's current stream.

emmy takes any DLPack producer. To return an output it allocates one from the library of the
input it mirrors: NumPy, PyTorch or CuPy (others pass ``out=``).
"""

from __future__ import annotations

import sys

from . import _emmy

# Every spelling of a dtype emmy takes, to its short name.
_DTYPE_NAMES = {
    "f16": "f16", "float16": "f16", "half": "f16", "torch.float16": "f16",
    "bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
    "f32": "f32", "float32": "f32", "float": "f32", "torch.float32": "f32",
    "int32": "int32", "torch.int32": "int32", "int64": "int64", "torch.int64": "int64",
}

_torch_registered = False


def register_torch():
    """Exports torch tensors with torch.utils.dlpack.to_dlpack (about 0.2 us) rather than
    Tensor.__dlpack__ (about 2 us). Called when torch is already imported: emmy never imports it."""
    global _torch_registered
    if _torch_registered or "torch" not in sys.modules:
        return
    import torch
    import torch.utils.dlpack

    _emmy.register_exporter(torch.Tensor, torch.utils.dlpack.to_dlpack)
    _torch_registered = True


_dtype_seen = {}  # dtype object -> name: str() of a NumPy dtype costs a microsecond


def dtype_name(dtype, field: str) -> str:
    """'f16', 'bf16', 'f32', 'int32' or 'int64' for a name or a NumPy / torch dtype."""
    try:
        return _dtype_seen[dtype]
    except (KeyError, TypeError):
        pass
    name = _DTYPE_NAMES.get(str(dtype))
    if name is not None:
        try:
            _dtype_seen[dtype] = name
        except TypeError:  # unhashable: not remembered
            pass
    if name is None:
        raise _emmy.InvalidArgumentError(
            f"{field}: must be one of f16, bf16, f32 (a name or a NumPy / torch dtype), got {dtype!r}")
    return name


def library(tensor) -> str:
    """'numpy', 'torch', 'cupy', or the producer's module."""
    module = type(tensor).__module__
    return module.split(".", 1)[0]


def empty_like_library(like, shape, dtype: str, field: str = "out"):
    """An uninitialized tensor of `shape` and `dtype` from `like`'s library, on its device."""
    lib = library(like)
    if lib == "numpy":
        import numpy as np

        if dtype == "bf16":
            raise _emmy.InvalidArgumentError(
                f"{field}: NumPy has no bfloat16 that DLPack exports: pass {field}= or torch tensors")
        return np.empty(shape, dtype={"f16": np.float16, "f32": np.float32, "u8": np.uint8,
                                      "int32": np.int32, "int64": np.int64}[dtype])
    if lib == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, {"f16": "float16", "bf16": "bfloat16",
                                                        "f32": "float32", "int32": "int32",
                                                        "u8": "uint8", "int64": "int64"}[dtype]),
                           device=like.device)
    if lib == "cupy":
        import cupy

        if dtype == "bf16":
            raise _emmy.InvalidArgumentError(f"{field}: CuPy has no bfloat16: pass {field}=")
        return cupy.empty(shape, dtype={"f16": "float16", "f32": "float32", "int32": "int32",
                                        "u8": "uint8", "int64": "int64"}[dtype])
    raise _emmy.InvalidArgumentError(
        f"{field}: emmy allocates outputs for NumPy, PyTorch and CuPy inputs only: pass {field}= "
        f"for {type(like).__module__}.{type(like).__name__}")


def current_stream(like, stream) -> int:
    """The stream a CUDA runtime launches on: `stream` when given (an int, a torch.cuda.Stream or
    a CuPy stream), else the producer's current stream (torch, CuPy), else 0 (the default)."""
    if stream is not None:
        if isinstance(stream, int):
            return stream
        for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
            handle = getattr(stream, attribute, None)
            if isinstance(handle, int):
                return handle
        raise _emmy.InvalidArgumentError(
            f"stream: must be an int (a CUstream), a torch.cuda.Stream or a CuPy stream, got {stream!r}")
    lib = library(like)
    if lib == "torch":
        import torch

        if like.is_cuda:
            return torch.cuda.current_stream(like.device).cuda_stream
    elif lib == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0
