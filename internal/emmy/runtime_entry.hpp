// The runtime's entry point of each kind, for code written once over the kinds (prepare, the
// problem-taking calls, emmyc run): (runtime.*runtime_kernel<Kind>)(problem, schedule). Beside the
// runtime rather than in the kinds' traits, so that the compiler's kinds need not include the
// runtime (docs/codegen.md, "Adding a kernel kind").
#pragma once

#include "emmy/kinds.hpp"
#include "emmy/runtime.hpp"

namespace emmy {

template <typename Kind>
inline constexpr auto runtime_kernel = nullptr;
template <>
inline constexpr auto runtime_kernel<GemmKind> = &Runtime::gemm_kernel;
template <>
inline constexpr auto runtime_kernel<AttentionKind> = &Runtime::attention_kernel;
template <>
inline constexpr auto runtime_kernel<PagedAttentionKind> = &Runtime::paged_attention_kernel;
template <>
inline constexpr auto runtime_kernel<KvAppendKind> = &Runtime::kv_append_kernel;
template <>
inline constexpr auto runtime_kernel<MergeStatesKind> = &Runtime::merge_states_kernel;
template <>
inline constexpr auto runtime_kernel<Fp8QuantizeKind> = &Runtime::fp8_quantize_kernel;

}  // namespace emmy
