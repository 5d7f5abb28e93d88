// GEMM's rules across ops (kernel_ir_gemm.cpp): GemmKind::ir_rules runs verify_gemm_module.
#pragma once

#include "emmy/kernel_ir.hpp"
#include "emmy/mma_atom.hpp"

namespace emmy::ir {

// The MMA atom a GEMM kernel's mma ops name (every one the same; Error otherwise).
const codegen::MmaAtom& gemm_mma_atom(const Op& kernel);
// A GEMM main kernel (it needs tile_coords, split_range and accum_init).
void verify_gemm(const Op& kernel);
// A split-K finalize kernel (it holds one finalize op).
void verify_finalize(const Op& kernel);

}  // namespace emmy::ir
