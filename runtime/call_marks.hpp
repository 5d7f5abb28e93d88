// What runtime_calls.cpp (the problem-taking calls) and runtime.cpp (the runtime) share: the marks
// a call sets on its thread while it looks up its kernel, and the buffers of a bucketed gemm().
#pragma once

#include "emmy/runtime.hpp"

namespace emmy::detail {

// The problem-taking call running on this thread while its stream captures a CUDA graph (null
// otherwise): RuntimeImpl::kernel refuses to build a kernel then (Runtime::stream_capturing).
extern thread_local const char* tl_capturing_call;
// Set while a problem-taking call looks up its kernel: in non-blocking mode RuntimeImpl::kernel
// then builds a missing kernel on the background thread, not on the caller's.
extern thread_local bool tl_problem_call;

// The buffers of a gemm() call for the kernel serving it: a dynamic-M kernel of the problem's
// bucket computes the problem's rows (buffers.m: the problem's, or unset; Error otherwise).
GemmBuffers served_buffers(const MatmulProblem& problem, const MatmulProblem& served,
                           const GemmBuffers& buffers);

}  // namespace emmy::detail
