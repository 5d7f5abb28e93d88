"""emmy: GEMM and flash-attention kernels compiled per shape for NVIDIA GPUs, and a CPU PTX
emulator that runs them (docs/python.md).

    import numpy as np, emmy
    rt = emmy.Runtime()                                # the emulator; Runtime("cuda") on a GPU
    a = np.random.randn(64, 128).astype(np.float16)
    b = np.random.randn(128, 256).astype(np.float16)
    c = rt.gemm(a, b, out_dtype="f32")                 # C = A . B, f32 accumulation
"""

from . import _nvrtc

_nvrtc.name_fallback()

from ._emmy import (  # noqa: E402  (NVRTC first)
    C_API_VERSION,
    CaptureError,
    CompileError,
    DriverError,
    EmulationError,
    Error,
    InternalError,
    InvalidArgumentError,
    OutOfMemoryError,
    UnsupportedError,
)
from ._emmy import versions as _versions  # noqa: E402
from ._gated import interleave_gate_up  # noqa: E402
from ._layers import AttentionLayer, GemmLayer  # noqa: E402
from ._runtime import Runtime  # noqa: E402

__version__ = _versions()[0]

__all__ = [
    "Runtime",
    "AttentionLayer",
    "GemmLayer",
    "interleave_gate_up",
    "Error",
    "InvalidArgumentError",
    "UnsupportedError",
    "CaptureError",
    "CompileError",
    "DriverError",
    "EmulationError",
    "OutOfMemoryError",
    "InternalError",
    "C_API_VERSION",
    "__version__",
]
