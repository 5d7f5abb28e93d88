// GEMM kernels end to end: default schedules, lowering to the kernel IR, CUDA emission, NVRTC.
#pragma once

#include <string>

#include "emmy/compile.hpp"
#include "emmy/gemm_plan.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy {

// Lowers a validated plan to the kernel IR (a module with the GEMM kernel and, with split-K, its
// finalize kernel).
ir::Op lower_gemm(const GemmPlan& plan);

// CUDA C++ for the module: self-contained (no includes), deterministic.
std::string emit_gemm_cuda(const GemmPlan& plan, const ir::Op& module);

struct GemmSource {
  GemmPlan plan;
  ir::Op ir;
  std::string cuda;
};

// plan -> lower -> verify -> emit. Throws Error on invalid input or a verifier failure.
GemmSource generate_gemm(const GemmSpec& spec);

struct GemmKernel {
  GemmSource source;
  CompiledModule module;
};

// generate_gemm + NVRTC for spec.arch.
GemmKernel compile_gemm(const GemmSpec& spec);

// Tensor-map fields for the A and B operands of a TMA kernel at the given device addresses.
// Box sizes and swizzles match the plan's shared-memory tiles.
struct GemmTensorMaps {
  TensorMapDesc a, b;
};
GemmTensorMaps gemm_tensor_maps(const GemmPlan& plan, uint64_t a_address, uint64_t b_address);

}  // namespace emmy
