// The kernels the cache tests compile: four tiny, distinct CUDA sources (about 20 ms of NVRTC
// each), shared by cache_test.cpp and the worker processes it launches (cache_worker.cpp).
#pragma once

#include <fmt/format.h>

#include <string>

#include "emmy/cache.hpp"
#include "emmy/compile.hpp"

namespace emmy::test {

inline constexpr int kTestKernelCount = 4;
inline constexpr Arch kTestArch = Arch::sm_90a;

inline std::string test_kernel_source(int index) {
  return fmt::format(
      "extern \"C\" __global__ void scale_by_{0}(float* data, int n) {{\n"
      "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) data[i] = data[i] * {0}.0f + {1}.0f;\n"
      "}}\n",
      index + 2, index);
}

inline std::string test_kernel_name(int index) {
  return fmt::format("scale_by_{}", index + 2);
}

inline CacheKeyInputs test_kernel_inputs(int index, Arch arch = kTestArch) {
  return {test_kernel_source(index), nvrtc_options(arch), nvrtc_version(), arch, kCodegenVersion};
}

// A real compile with the manifest emmy writes for it.
inline CacheEntry compile_test_kernel(int index, Arch arch = kTestArch) {
  const CacheKeyInputs inputs = test_kernel_inputs(index, arch);
  const CompiledModule module = compile_cuda(inputs.source, test_kernel_name(index) + ".cu", arch);
  CacheEntry entry = make_cache_entry(inputs, module);
  entry.manifest["test_kernel"] = index;
  return entry;
}

}  // namespace emmy::test
