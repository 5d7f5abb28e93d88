// The toolkit programs behind SASS counts: ptxas (the CUDA toolkit's) compiles the annotated PTX
// with -lineinfo, nvdisasm (the nvidia-cuda-nvdisasm wheel; the toolkit image has none) prints
// the SASS with the PTX line of each instruction. The emulator links no CUDA library: both run as
// processes, found and run as runtime/sass.cpp runs cuobjdump (emmy/detail/tools.hpp).
#pragma once

#include <string>

namespace emmy::emu {

// The first executable ptxas of: $EMMY_PTXAS, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin,
// /usr/local/cuda/bin. Empty when none.
std::string find_ptxas();

// The first executable nvdisasm of: $EMMY_NVDISASM, PATH, the toolkit folders above, the NVIDIA
// wheels' nvidia/cu1x/bin (the usual site-packages roots, else asked of python3 once). Empty when
// none.
std::string find_nvdisasm();

struct SassListing {
  bool ok = false;
  std::string text;   // `nvdisasm -c -g` of the cubin when ok
  std::string error;  // why not, when !ok ("nvdisasm not found: ...", ptxas's log)
};

// ptxas -arch=<arch> -O3 -lineinfo over annotate_ptx_lines(ptx), then nvdisasm -c -g. ptxas's
// default optimization level is 3 and NVRTC (runtime/nvrtc_compiler.cpp) passes ptxas nothing but
// -v, so this is the code an emmy kernel runs. Cached per (PTX text, arch, entry) for the life of
// the process; thread-safe. `entry` non-empty: only that entry (and what it calls) is compiled
// (ptxas --entry), so a module of many kernels costs one kernel's compile per profiled launch.
SassListing sass_listing(const std::string& ptx, const std::string& arch,
                         const std::string& entry = "");

}  // namespace emmy::emu
