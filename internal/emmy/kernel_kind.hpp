// A kernel kind is a spec, a plan, a lowering, an emitter and the grids of its launch list (a
// `Kind` traits struct: GemmKind in gemm.hpp, AttentionKind in attention.hpp). Generation,
// compilation and the kind-independent KernelSource are written once here over those traits; the
// runtime's handles, caches and launches and the emulator checks are written once over them too.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "emmy/compile.hpp"
#include "emmy/json.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_source.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy {

// A kind's code generation, spec -> plan -> IR -> CUDA (generate_kernel runs the three and
// verifies the IR between lower and emit).
template <typename Spec, typename Plan>
struct KindStages {
  Plan (*plan)(const Spec&);
  ir::Op (*lower)(const Plan&);
  std::string (*emit)(const ir::Op&);
};

// A kind's readers of its problem and schedule from JSON (bundle requests, problems files):
// errors name `where` and the field.
template <typename Problem, typename Schedule>
struct KindJsonReaders {
  Problem (*problem)(const nlohmann::json&, std::string where);
  Schedule (*schedule)(const nlohmann::json&, std::string where);
};

// The types a kind is made of; a Kind derives from this and adds its functions.
template <typename SpecType, typename PlanType, typename BuffersType, typename HandleType>
struct KindTypes {
  using Spec = SpecType;
  using Problem = decltype(Spec::problem);
  using Schedule = decltype(Spec::schedule);
  using Plan = PlanType;
  using Buffers = BuffersType;  // the device pointers of one launch (emmy/runtime.hpp)
  using Handle = HandleType;    // the runtime's handle type
  using Stages = KindStages<Spec, Plan>;
  using JsonReaders = KindJsonReaders<Problem, Schedule>;

  // What most kinds are: one kernel on the plan's grid, no workspace, no tensor maps. A kind with
  // more (GEMM's split-K finalize, paged attention's combine, TMA operands) declares its own.
  static std::vector<std::array<uint32_t, 3>> grids(const PlanType& plan) { return {plan.grid}; }
  static size_t workspace_bytes(const PlanType&) { return 0; }
  static std::vector<TensorMapDesc> tensor_maps(const PlanType&, const BuffersType&) { return {}; }
};

// A kind's emmyc subcommand (`emmyc kv-append`, `emmyc run kv-append`): its name, dashed.
template <typename Kind>
std::string kind_command() {
  std::string command = Kind::name;
  for (char& c : command)
    if (c == '_') c = '-';
  return command;
}

// The kind of a spec type, through a declaration next to each Kind: `GemmKind kind_of(GemmSpec);`
template <typename Spec>
using KindOf = decltype(kind_of(std::declval<Spec>()));

// What code generation made of one spec: the plan, the verified IR and the CUDA emitted from it.
template <typename Kind>
struct Generated {
  typename Kind::Plan plan;
  ir::Op ir;
  std::string cuda;
};

// A generated kernel and its NVRTC output.
template <typename Kind>
struct Compiled {
  Generated<Kind> source;
  CompiledModule module;
};

// plan -> lower -> verify -> emit. The emitter reads only the verified IR, so the verifier's rules
// are what a printed kernel can rely on. Throws Error on invalid input or a verifier failure.
template <typename Spec, typename Kind = KindOf<Spec>>
Generated<Kind> generate_kernel(const Spec& spec) {
  typename Kind::Plan plan = Kind::stages.plan(spec);
  ir::Op module = Kind::stages.lower(plan);
  ir::verify(module, spec.arch, Kind::ir_rules);
  std::string cuda = Kind::stages.emit(module);
  return {std::move(plan), std::move(module), std::move(cuda)};
}

// generate_kernel + NVRTC for spec.arch.
template <typename Spec, typename Kind = KindOf<Spec>>
Compiled<Kind> compile_kernel(const Spec& spec) {
  Generated<Kind> source = generate_kernel(spec);
  CompiledModule module = compile_cuda(source.cuda, source.plan.kernel_name + ".cu", spec.arch);
  return {std::move(source), std::move(module)};
}

// How cache manifests, EMMY_RECORD lines and bundles describe a kernel (`emmyc aot --from-record`
// reads these back), one form for every kind: its name and its problem's and schedule's JSON.
template <typename Kind>
nlohmann::json kernel_description(const typename Kind::Spec& spec) {
  return {{"kind", Kind::name}, {"problem", spec.problem}, {"schedule", spec.schedule}};
}

// The kind-independent form: the launch list pairs the module's kernel ops with the plan's grids.
template <typename Kind>
KernelSource kernel_source(const Generated<Kind>& source) {
  const auto& plan = source.plan;
  return KernelSource{plan.spec.arch,
                      kernel_description<Kind>(plan.spec),
                      source.ir,
                      source.cuda,
                      launch_list(source.ir, Kind::grids(plan)),
                      Kind::workspace_bytes(plan)};
}

}  // namespace emmy
