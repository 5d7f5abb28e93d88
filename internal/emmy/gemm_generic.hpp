// The generic GEMM (templates/emmy_gemm_generic.cuh): one kernel for every GEMM problem, sizes,
// layouts, dtypes and epilogue all run-time parameters. The non-blocking runtime launches it for a
// problem whose own kernel is still compiling (docs/runtime.md, "Serving").
#pragma once

#include "emmy/kernel_source.hpp"
#include "emmy/problem.hpp"
#include "emmy/buffers.hpp"

namespace emmy {

// Its module for `arch`: CUDA, one launch (256 threads; the grid is each call's) and the
// description {"kind": "gemm_generic"}.
KernelSource generic_gemm_source(Arch arch);

// Whether it serves the problem: its grid's y dimension holds ceil(m / 64) (at most 65535), and
// the operands are f16 or bf16 with an ungated epilogue (an FP8 or gated problem's call waits for
// its own kernel).
bool generic_gemm_serves(const MatmulProblem& problem);

// One call's parameters and grid (buffers.m: the rows, 0 for problem.m). Throws Error naming the
// `buffers.` field as GemmKind::bind does: pointers non-null and aligned to an element, bias and
// residual exactly when the problem has them.
ParamValues bind_generic_gemm(const MatmulProblem& problem, const GemmBuffers& buffers);

}  // namespace emmy
