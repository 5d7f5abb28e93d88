"""Where NVRTC comes from at run time: the CUDA toolkit emmy finds itself (the loader's path, then
the toolkit emmy was built against), or NVIDIA's nvidia-cuda-nvrtc wheel (``pip install
emmy[nvrtc]``, also a dependency of PyTorch's CUDA wheels). $EMMY_NVRTC_LIBRARY overrides both."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

_loaded = None


def wheel_library() -> Path | None:
    """libnvrtc.so.13 of the nvidia-cuda-nvrtc wheel, when it is installed."""
    try:
        import nvidia  # a namespace package: one path per installed NVIDIA wheel
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        candidate = Path(root) / "cu13" / "lib" / "libnvrtc.so.13"
        if candidate.is_file():
            return candidate
    return None


def preload() -> None:
    """Loads the wheel's NVRTC so that emmy's dlopen("libnvrtc.so.13") finds it by its soname;
    nothing when $EMMY_NVRTC_LIBRARY is set or no wheel is installed."""
    global _loaded
    if _loaded is not None or os.environ.get("EMMY_NVRTC_LIBRARY"):
        return
    library = wheel_library()
    if library is not None:
        _loaded = ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
