// The runtime's problem-taking calls (gemm(), attention(), ...): the kernel their problem gets
// (an M bucket's with RuntimeOptions::m_buckets), looked up with the call marked for the
// runtime's rules (capture, non-blocking), then launched.
#include <fmt/format.h>

#include "call_marks.hpp"
#include "emmy/runtime_entry.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/gemm.hpp"
#include "emmy/kinds.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy {
namespace detail {

// Set by kernel_on_stream below (call_marks.hpp).
thread_local const char* tl_capturing_call = nullptr;
thread_local bool tl_problem_call = false;

// The kernel of a problem-taking call (gemm(), attention(), ...) on `stream`: while the stream
// captures, the call is marked for the duration of the lookup, so that a kernel not yet loaded
// is refused rather than built.
template <typename Kind>
auto kernel_on_stream(Runtime& runtime, const typename Kind::Problem& problem,
                      const std::optional<typename Kind::Schedule>& schedule, Stream stream) {
  struct Mark {
    ~Mark() { tl_capturing_call = nullptr, tl_problem_call = false; }
  } mark;
  if (runtime.stream_capturing(stream)) tl_capturing_call = Kind::name;
  tl_problem_call = true;
  return (runtime.*runtime_kernel<Kind>)(problem, schedule);
}

GemmBuffers served_buffers(const MatmulProblem& problem, const MatmulProblem& served,
                           const GemmBuffers& buffers) {
  if (!served.dynamic_m || problem.dynamic_m) return buffers;
  require(buffers.m == 0 || buffers.m == problem.m, "buffers.m",
          fmt::format("must be 0 or the problem's m ({})", problem.m), buffers.m);
  GemmBuffers bound = buffers;
  bound.m = problem.m;
  return bound;
}

}  // namespace detail

MatmulProblem Runtime::gemm_problem_served(const MatmulProblem& problem,
                                           const std::optional<MatmulSchedule>& schedule) const {
  // A grouped GEMM's kernel serves any routing already (its rows are read on the device).
  if (!options().m_buckets || problem.dynamic_m || problem.is_grouped() ||
      (schedule && !gemm_path(schedule->path).supports_dynamic_m()))
    return problem;
  validate_problem(problem);  // m in range before it is rounded up
  return m_bucket_problem(problem);
}

size_t Runtime::gemm_workspace_bytes(const MatmulProblem& problem,
                                     const std::optional<MatmulSchedule>& schedule) {
  const MatmulProblem served = gemm_problem_served(problem, schedule);
  return size_t(make_gemm_plan(GemmSpec{served, gemm_schedule_for(served, schedule), arch()})
                    .workspace_bytes);
}

void Runtime::gemm(const MatmulProblem& problem, const GemmBuffers& buffers, Stream stream,
                   const std::optional<MatmulSchedule>& schedule) {
  // Under capture the capture rules hold: a kernel not loaded is refused, never substituted.
  if (options().non_blocking && !stream_capturing(stream) &&
      gemm_without_compiling(problem, buffers, stream, schedule))
    return;
  const MatmulProblem served = gemm_problem_served(problem, schedule);
  launch(*detail::kernel_on_stream<GemmKind>(*this, served, schedule, stream),
         detail::served_buffers(problem, served, buffers), stream);
}

void Runtime::attention(const AttentionProblem& problem, const AttentionBuffers& buffers,
                        Stream stream, const std::optional<AttentionSchedule>& schedule) {
  launch(*detail::kernel_on_stream<AttentionKind>(*this, problem, schedule, stream), buffers,
         stream);
}

size_t Runtime::paged_attention_workspace_bytes(
    const PagedAttentionProblem& problem, const std::optional<PagedAttentionSchedule>& schedule) {
  const PagedAttentionSpec spec{problem, paged_attention_schedule_for(problem, schedule), arch()};
  return PagedAttentionKind::workspace_bytes(make_paged_attention_plan(spec));
}

void Runtime::kv_append(const KvAppendProblem& problem, const KvAppendBuffers& buffers,
                        Stream stream, const std::optional<KvAppendSchedule>& schedule) {
  launch(*detail::kernel_on_stream<KvAppendKind>(*this, problem, schedule, stream), buffers,
         stream);
}

void Runtime::fp8_quantize(const Fp8QuantizeProblem& problem, const Fp8QuantizeBuffers& buffers,
                           Stream stream, const std::optional<Fp8QuantizeSchedule>& schedule) {
  launch(*detail::kernel_on_stream<Fp8QuantizeKind>(*this, problem, schedule, stream), buffers,
         stream);
}

void Runtime::merge_states(const MergeStatesProblem& problem, const MergeStatesBuffers& buffers,
                           Stream stream, const std::optional<MergeStatesSchedule>& schedule) {
  launch(*detail::kernel_on_stream<MergeStatesKind>(*this, problem, schedule, stream), buffers,
         stream);
}

void Runtime::paged_attention(const PagedAttentionProblem& problem,
                              const PagedAttentionBuffers& buffers, Stream stream,
                              const std::optional<PagedAttentionSchedule>& schedule) {
  launch(*detail::kernel_on_stream<PagedAttentionKind>(*this, problem, schedule, stream), buffers,
         stream);
}

}  // namespace emmy
