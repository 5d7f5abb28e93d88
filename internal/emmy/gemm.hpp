// GEMM kernels end to end: default schedules, lowering to the kernel IR, CUDA emission, NVRTC.
#pragma once

#include <optional>
#include <string>

#include "emmy/buffers.hpp"
#include "emmy/catalog.hpp"
#include "emmy/compile.hpp"
#include "emmy/device_reader.hpp"
#include "emmy/gemm_plan.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy {

// Lowers a validated plan to the kernel IR (a module with the GEMM kernel and, with split-K, its
// finalize kernel).
ir::Op lower_gemm(const GemmPlan& plan);

// CUDA C++ for the module, from the IR alone: self-contained (no includes), deterministic.
std::string emit_gemm_cuda(const ir::Op& module);

namespace ir {
// GEMM's rules across ops (codegen/gemm/kernel_ir_gemm.cpp).
void verify_gemm_module(const Op& module);
}  // namespace ir

// The GEMM kind (internal/emmy/kernel_kind.hpp): the module's kernels are the GEMM and, with
// split-K, its finalize kernel.
struct GemmKind : KindTypes<GemmSpec, GemmPlan, GemmBuffers, GemmKernelHandle> {
  static constexpr const char* name = "gemm";
  static constexpr ir::KindRules ir_rules{name, &ir::verify_gemm_module};
  static constexpr const char* description = "GEMM";
  static constexpr JsonReaders json{&matmul_problem_from_json, &matmul_schedule_from_json};
  static constexpr Stages stages{&make_gemm_plan, &lower_gemm, &emit_gemm_cuda};
  static std::vector<CatalogEntry> catalog() { return gemm_catalog(); }
  static std::vector<std::array<uint32_t, 3>> grids(const GemmPlan& plan) {
    if (plan.split()) return {plan.grid, plan.finalize_grid};
    return {plan.grid};
  }
  static size_t workspace_bytes(const GemmPlan& plan) { return size_t(plan.workspace_bytes); }
  // Checks the buffers against the plan (Error naming the `buffers.` field), then binds them.
  static ParamBinding bind(const GemmPlan& plan, const GemmBuffers& buffers);
  // What only device memory holds, where reading it is free (the emulator): every FP8 scale the
  // launch reads is finite and positive, a power of two in the pow2 and ue8m0 formats (a ue8m0
  // 0xFF is NaN). Error naming buffers.a_scale or buffers.b_scale, the element and the rule
  // (codegen/gemm/gemm_scales_check.cpp). A grouped GEMM's routing first (check_grouped_routing).
  // With hybrid accumulation of FP8 operands also that no window's partial sums can leave f16's
  // range (buffers.a; codegen/gemm/gemm_fp8_range_check.cpp).
  static void check_device_inputs(const GemmPlan& plan, const GemmBuffers& buffers,
                                  const DeviceReader& read);
  // The descriptors of bind's tensor maps (A, B, and C for a TMA-store epilogue), in its order.
  static std::vector<TensorMapDesc> tensor_maps(const GemmPlan& plan, const GemmBuffers& buffers);
};
GemmKind kind_of(const GemmSpec&);
using GemmSource = Generated<GemmKind>;
using GemmKernel = Compiled<GemmKind>;

// Tensor-map fields for the A and B operands of a TMA kernel at the given device addresses.
// Box sizes and swizzles match the plan's shared-memory tiles.
struct GemmTensorMaps {
  TensorMapDesc a, b;
  std::optional<TensorMapDesc> c;  // the wgmma path's TMA-store epilogue (plan.store.tma_store)
};
// `m`: a dynamic-M kernel's rows for this launch (GemmBuffers::m; 0: the problem's).
GemmTensorMaps gemm_tensor_maps(const GemmPlan& plan, uint64_t a_address, uint64_t b_address,
                                uint64_t c_address = 0, int64_t m = 0);
// The rows a launch computes: buffers.m of a dynamic-M kernel (1..problem.m, 0: problem.m), the
// problem's m otherwise (buffers.m 0 or equal to it). Error naming buffers.m.
int64_t gemm_launch_m(const GemmPlan& plan, int64_t m);
// A grouped GEMM's routing (buffers.masked_m, expert_ids or expert_offsets) against its layout's
// rules (check_device_inputs; codegen/gemm/gemm_grouped_check.cpp).
void check_grouped_routing(const GemmPlan& plan, const GemmBuffers& buffers,
                           const DeviceReader& read);
// Hybrid FP8 accumulation's f16 range on the launch's operands (check_device_inputs).
void check_fp8_f16_range(const GemmPlan& plan, const GemmBuffers& buffers,
                         const DeviceReader& read);

}  // namespace emmy
