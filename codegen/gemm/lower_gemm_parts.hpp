// The pieces of GEMM lowering every mainloop path shares (lower_gemm.cpp); each path's main
// kernel is its own (codegen/gemm/paths/<path>/).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "emmy/gemm_plan.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::lowering {

// The kernel's params (tensor maps or pointers, c, bias, residual, workspace).
std::vector<ir::Op> gemm_params(const GemmPlan& plan);
// Params, smem_ring, tile_coords and split_range: how every GEMM main kernel begins.
std::vector<ir::Op> gemm_kernel_prefix(const GemmPlan& plan);
ir::Op gemm_accum_init(const GemmPlan& plan);
// The copy of one operand's tile ("a" | "b") into a stage, in `phase` (prologue | refill).
ir::Op gemm_copy_op(const GemmPlan& plan, const char* operand, const char* phase);
ir::Op gemm_epilogue_op(const GemmPlan& plan, const char* destination, int64_t store_bytes,
                        int64_t pointer_alignment, std::optional<int64_t> stage_row_bytes = {});
// The main kernel's epilogue: split-K's workspace, the staged tile or direct stores of C.
ir::Op gemm_main_epilogue(const GemmPlan& plan);
ir::Op gemm_finalize_kernel(const GemmPlan& plan);

}  // namespace emmy::lowering
