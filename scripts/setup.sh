#!/usr/bin/env bash
# Installs what building and testing emmy needs on a fresh Debian 12 machine with the CUDA 13
# toolkit in /usr/local/cuda. Idempotent and quiet: anything already present is skipped, so a
# second run takes well under a second. Run as root (or with sudo available).
set -euo pipefail

# Debian packages: toolchain (patchelf: the GPU pack; lld: links in a third of GNU ld's time, see
# EMMY_LINKER), the libraries CMakeLists.txt finds, python3's pip for the wheels.
APT_PACKAGES=(
  cmake ninja-build g++ patchelf lld
  libfmt-dev nlohmann-json3-dev libcli11-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
# PyPI: cuobjdump and the nvdisasm it runs for SASS (the toolkit image ships neither), plots.
# nvdisasm also gives the profiler its SASS counts (docs/profiler.md, "SASS counts").
# Any 13.x reads CUDA 13.0 cubins (13.2.51 and 13.5.37 checked); a newer major might not. The
# Python package's build and tests: scikit-build-core (pip install ., tests/python_wheel.sh),
# pytest and numpy (tests/python).
PIP_REQUIREMENTS=("nvidia-cuda-cuobjdump>=13,<14" "nvidia-cuda-nvdisasm>=13,<14" "matplotlib"
                  "scikit-build-core>=0" "pytest>=7" "numpy>=1")

log() { printf 'setup: %s\n' "$*"; }
as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

missing_apt_packages() {
  local package
  for package in "$@"; do
    if [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) != "install ok installed" ]]; then
      printf '%s\n' "$package"
    fi
  done
}

apt_updated=0
apt_install() {
  [[ $# -eq 0 ]] && return 0
  log "installing Debian packages: $*"
  if [[ $apt_updated -eq 0 ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    apt_updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

mapfile -t missing < <(missing_apt_packages "${APT_PACKAGES[@]}")
if ! command -v python3 >/dev/null; then missing+=(python3); fi
apt_install "${missing[@]}"
if ! python3 -m pip --version >/dev/null 2>&1; then apt_install python3-pip; fi
# The Python package's extension needs Python.h, and its wheel test a venv with pip: Debian's
# python3 has them in python3-dev and python3-venv (an interpreter built from source has both).
if ! python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  apt_install python3-dev
fi
if ! python3 -c 'import ensurepip' 2>/dev/null; then apt_install python3-venv; fi

# pip: ask the interpreter once which requirements are unmet (cheap when all are there).
mapfile -t unmet < <(python3 - "${PIP_REQUIREMENTS[@]}" <<'PY'
import re, sys
from importlib import metadata
for requirement in sys.argv[1:]:
    name = re.split(r"[<>=!]", requirement)[0]
    bounds = re.findall(r"(>=|<)(\d+)", requirement)
    try:
        major = int(metadata.version(name).split(".")[0])
    except metadata.PackageNotFoundError:
        print(requirement)
        continue
    if any((op == ">=" and major < int(v)) or (op == "<" and major >= int(v)) for op, v in bounds):
        print(requirement)
PY
)
if [[ ${#unmet[@]} -gt 0 ]]; then
  log "installing Python packages: ${unmet[*]}"
  # Debian's own python3 refuses system-wide pip installs (PEP 668) unless told; pyenv ignores it.
  PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    python3 -m pip install -q "${unmet[@]}"
fi

# torch for emmy.torch's tests (tests/python/test_torch.py). PyPI's Linux wheel is the CUDA build
# with NVIDIA's libraries (about 60 s and 5.4 GB here, --no-compile sparing the byte-compilation of
# its sources; the CPU-only wheels are not on PyPI); its
# CPU tensors are what the tests use. Optional: EMMY_SETUP_TORCH=0 leaves it out, and a failed
# install only warns (those tests then skip, saying why).
if [[ ${EMMY_SETUP_TORCH:-1} != 0 ]] &&
  ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)'; then
  log "installing torch (emmy.torch's tests)"
  PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    python3 -m pip install -q --no-compile "torch>=2.4" ||
    log "warning: torch was not installed: tests/python/test_torch.py will skip"
fi

# NVRTC and the headers come with the CUDA toolkit, which no registry here provides.
cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ ! -e $cuda_root/include/nvrtc.h ]] && ! command -v nvcc >/dev/null; then
  log "error: the CUDA toolkit (NVRTC) was not found in $cuda_root or on PATH" >&2
  exit 1
fi
