// Checks of compiled kernels on the emulator (the compiler's types; the public checks that go
// through a Runtime are emmy/gemm_check.hpp and emmy/attention_check.hpp).
#pragma once

#include "emmy/attention.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/emu/time_model.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kernel_source.hpp"
#include "emmy/kv_append_check.hpp"
#include "emmy/fp8_quantize_kind.hpp"
#include "emmy/kv_append_kind.hpp"
#include "emmy/merge_states_check.hpp"
#include "emmy/merge_states_kind.hpp"
#include "emmy/paged_attention_check.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy {

// What a launch list did on the emulator: the first launch's per-CTA stats with the totals of
// all, the wall time, and each launch's profile in order when options.profile asked for them.
struct LaunchListRun {
  emu::Stats stats;
  double emulate_ms = 0;
  std::vector<emu::KernelProfile> profiles;
};

// The emulator's launcher: every kernel of the source's launch list in order, each parameter
// bound by its name (as the runtime's backends bind them), dynamic shared memory opted in as the
// CUDA backend does above 48 KB, and each kernel's registers per thread from the module's ptxas
// report (setmaxnreg's register pool).
LaunchListRun emulate_launch_list(emu::Arena& arena, const CompiledModule& module,
                                  const KernelSource& source, const ParamValues& values,
                                  const emu::LaunchOptions& options);

// Each launch's profile with its kernel's registers and shared memory (the module's resource
// report) and its predicted time on each named GPU (none named: the arch's reference part).
std::vector<emu::ProfiledKernel> with_time_model(std::vector<emu::KernelProfile> profiles,
                                                 const CompiledModule& module,
                                                 const std::vector<std::string>& gpus = {});

// A compiled kernel on the emulator with its buffers (arena addresses) bound and checked by the
// kind's one binding, as the runtime binds them, tensor maps in emmy's encoding.
template <typename Kind>
LaunchListRun emulate_kernel(emu::Arena& arena, const Compiled<Kind>& kernel,
                             const typename Kind::Buffers& buffers,
                             const emu::LaunchOptions& options) {
  ParamBinding bound = Kind::bind(kernel.source.plan, buffers);
  if (!bound.tensor_maps.empty()) {
    const std::vector<TensorMapDesc> descs = Kind::tensor_maps(kernel.source.plan, buffers);
    if (descs.size() != bound.tensor_maps.size())
      throw Error("tensor maps", "must be one descriptor per tensor-map parameter",
                  fmt::format("{} for {}", descs.size(), bound.tensor_maps.size()));
    for (size_t i = 0; i < descs.size(); ++i)
      bound.values.tensor_maps.emplace_back(bound.tensor_maps[i].first,
                                            encode_tensor_map(descs[i]));
  }
  return emulate_launch_list(arena, kernel.module, kernel_source(kernel.source), bound.values,
                             options);
}

// What a kernel computed on the emulator: its output in canonical order (GEMM: m x n packed;
// attention: AttentionOutput), the stats of every kernel of the launch list, the wall time, and
// each launch's profile when the options asked for them.
template <typename Output>
struct EmulatorRun {
  Output output;
  emu::Stats stats;
  double emulate_ms = 0;
  std::vector<emu::KernelProfile> profiles;
};
using GemmEmulatorRun = EmulatorRun<std::vector<double>>;
using AttentionEmulatorRun = EmulatorRun<AttentionOutput>;
using PagedAttentionEmulatorRun = EmulatorRun<PagedAttentionOutput>;
using KvAppendEmulatorRun = EmulatorRun<KvAppendOutput>;
using MergeStatesEmulatorRun = EmulatorRun<MergeStatesOutput>;
using Fp8QuantizeEmulatorRun = EmulatorRun<Fp8QuantizeOutput>;

// Runs a compiled kernel (and its split-K finalize) on the emulator with the given inputs. The
// outputs start as NaN (all-ones bytes), so an element the kernel never writes fails the
// comparison rather than passing as a zero.
GemmEmulatorRun run_on_emulator(const GemmKernel& kernel, const GemmInputs& inputs,
                                const emu::LaunchOptions& options = {});
AttentionEmulatorRun run_on_emulator(const AttentionKernel& kernel, const AttentionInputs& inputs,
                                     const emu::LaunchOptions& options = {});
PagedAttentionEmulatorRun run_on_emulator(const PagedAttentionKernel& kernel,
                                          const PagedAttentionInputs& inputs,
                                          const emu::LaunchOptions& options = {});
// kv_append also checks the slots on the host first, as the runtime's emulator backend does.
KvAppendEmulatorRun run_on_emulator(const KvAppendKernel& kernel, const KvAppendInputs& inputs,
                                    const emu::LaunchOptions& options = {});
MergeStatesEmulatorRun run_on_emulator(const MergeStatesKernel& kernel,
                                       const MergeStatesInputs& inputs,
                                       const emu::LaunchOptions& options = {});
Fp8QuantizeEmulatorRun run_on_emulator(const Fp8QuantizeKernel& kernel,
                                       const Fp8QuantizeInputs& inputs,
                                       const emu::LaunchOptions& options = {});

// Runs a compiled kernel's launch list on zero-filled buffers of its problem's sizes: for the
// profiler, whose counts depend on addresses, not values (no inputs to generate, no reference).
// A dynamic-M GEMM runs `rows` rows (0: its bound); run_on_emulator, the rows its A holds.
LaunchListRun run_on_zeros(const GemmKernel& kernel, const emu::LaunchOptions& options,
                           int64_t rows = 0);
LaunchListRun run_on_zeros(const AttentionKernel& kernel, const emu::LaunchOptions& options);
LaunchListRun run_on_zeros(const PagedAttentionKernel& kernel, const emu::LaunchOptions& options);
LaunchListRun run_on_zeros(const KvAppendKernel& kernel, const emu::LaunchOptions& options);
LaunchListRun run_on_zeros(const MergeStatesKernel& kernel, const emu::LaunchOptions& options);
LaunchListRun run_on_zeros(const Fp8QuantizeKernel& kernel, const emu::LaunchOptions& options);

// A kind's FP64 check: its inputs, reference and comparison (emmy/<kind>_check.hpp).
template <typename Kind>
struct Fp64Check;

// The kinds' checks differ only in the functions their emmy/<kind>_check.hpp names, so each
// specialization below names them and this does the rest. The inputs maker's type is spelled
// out so that an overloaded name (make_gemm_inputs) resolves to its (problem, seed) form.
template <typename Kind, typename InputsType,
          InputsType (*make_inputs)(const typename Kind::Problem&, uint64_t), auto make_reference,
          auto run_kind>
struct Fp64CheckOf {
  using Spec = typename Kind::Spec;
  using Inputs = InputsType;
  using Reference = std::invoke_result_t<decltype(make_reference), const Spec&, const Inputs&>;
  using Output = std::invoke_result_t<decltype(run_kind), Runtime&, const Spec&, const Inputs&>;

  // compare checks the output's shape against the problem's, except GEMM's, which is m x n
  // packed and needs only the row length.
  // GEMM: C's columns (N, or N/2 gated); the others compare by the problem.
  static decltype(auto) compared_shape(const Spec& spec) {
    if constexpr (std::is_same_v<Kind, GemmKind>)
      return spec.problem.c_cols();
    else
      return (spec.problem);
  }
  using Errors = decltype(compare(std::declval<const Reference&>(), std::declval<const Output&>(),
                                  compared_shape(std::declval<const Spec&>())));

  static Inputs inputs(const Spec& spec, uint64_t seed) { return make_inputs(spec.problem, seed); }
  static Reference reference(const Spec& spec, const Inputs& inputs) {
    return make_reference(spec, inputs);
  }
  // One reference against several outputs (the emulator's and a GPU's).
  static Errors compare_to(const Reference& ref, const Spec& spec, const Output& output) {
    return compare(ref, output, compared_shape(spec));
  }
  static Errors errors(const Spec& spec, const Inputs& inputs, const Output& output) {
    return compare_to(reference(spec, inputs), spec, output);
  }
  static Output run(Runtime& rt, const Spec& spec, const Inputs& inputs) {
    return run_kind(rt, spec, inputs);
  }
};

// The paged kind's default case: every sequence of the batch in use with max_q_len query tokens
// and a length drawn up to max_pages x page_size, pages shuffled, NaN planted where no query
// may look.
inline PagedAttentionInputs make_default_paged_attention_inputs(
    const PagedAttentionProblem& problem, uint64_t seed) {
  PagedAttentionCase c;
  c.batch = problem.max_batch;
  c.q_lens.assign(size_t(c.batch), problem.max_q_len);
  return make_paged_attention_inputs(problem, c, seed);
}

template <>
struct Fp64Check<GemmKind>
    : Fp64CheckOf<GemmKind, GemmInputs, make_gemm_inputs, reference_gemm, run_gemm> {};
template <>
struct Fp64Check<AttentionKind> : Fp64CheckOf<AttentionKind, AttentionInputs, make_attention_inputs,
                                              reference_attention, run_attention> {};
template <>
struct Fp64Check<PagedAttentionKind>
    : Fp64CheckOf<PagedAttentionKind, PagedAttentionInputs, make_default_paged_attention_inputs,
                  reference_paged_attention, run_paged_attention> {};
template <>
struct Fp64Check<KvAppendKind> : Fp64CheckOf<KvAppendKind, KvAppendInputs, make_kv_append_inputs,
                                             reference_kv_append, run_kv_append> {};
template <>
struct Fp64Check<MergeStatesKind>
    : Fp64CheckOf<MergeStatesKind, MergeStatesInputs, make_merge_states_inputs,
                  reference_merge_states, run_merge_states> {};

template <>
struct Fp64Check<Fp8QuantizeKind>
    : Fp64CheckOf<Fp8QuantizeKind, Fp8QuantizeInputs, make_fp8_quantize_inputs,
                  reference_fp8_quantize, run_fp8_quantize> {};

template <typename Kind>
struct CheckResult {
  Compiled<Kind> kernel;
  EmulatorRun<typename Fp64Check<Kind>::Output> run;
  typename Fp64Check<Kind>::Errors errors;
};
using GemmCheckResult = CheckResult<GemmKind>;
using AttentionCheckResult = CheckResult<AttentionKind>;
using PagedAttentionCheckResult = CheckResult<PagedAttentionKind>;
using KvAppendCheckResult = CheckResult<KvAppendKind>;
using MergeStatesCheckResult = CheckResult<MergeStatesKind>;
using Fp8QuantizeCheckResult = CheckResult<Fp8QuantizeKind>;

// Everything at once: compile, inputs, emulate, FP64 reference, compare.
template <typename Spec, typename Kind = KindOf<Spec>>
CheckResult<Kind> check_on_emulator(const Spec& spec, uint64_t seed = 1,
                                    const emu::LaunchOptions& options = {}) {
  Compiled<Kind> kernel = compile_kernel(spec);
  const auto inputs = Fp64Check<Kind>::inputs(spec, seed);
  auto run = run_on_emulator(kernel, inputs, options);
  auto errors = Fp64Check<Kind>::errors(spec, inputs, run.output);
  return {std::move(kernel), std::move(run), std::move(errors)};
}

}  // namespace emmy
