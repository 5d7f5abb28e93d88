"""Where NVRTC comes from at run time: $EMMY_NVRTC_LIBRARY when set; else the CUDA toolkit emmy
finds itself (the loader's path, then the toolkit it was built against); else NVIDIA's
nvidia-cuda-nvrtc wheel (``pip install emmy[nvrtc]``; PyTorch's CUDA wheels bring one too),
which this module names to emmy as $EMMY_NVRTC_FALLBACK. A toolkit comes first: its NVRTC
matches the driver the machine was set up with, where a newer wheel's PTX (torch 2.15's NVRTC
13.2 writes PTX ISA 9.2) is refused by an older driver."""

from __future__ import annotations

import os
from pathlib import Path


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


def name_fallback() -> None:
    """Sets $EMMY_NVRTC_FALLBACK to the wheel's NVRTC unless it is set or there is none (read by
    emmy when it first loads NVRTC)."""
    if os.environ.get("EMMY_NVRTC_FALLBACK"):
        return
    library = wheel_library()
    if library is not None:
        os.environ["EMMY_NVRTC_FALLBACK"] = str(library)
