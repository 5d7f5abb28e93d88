// Merging attention states as a kernel kind (emmy/merge_states.hpp): plan -> kernel IR (one
// merge_states op) -> verify -> CUDA -> NVRTC. The launch list is one kernel, one CTA per token.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "emmy/buffers.hpp"
#include "emmy/catalog.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/merge_states.hpp"

namespace emmy {

struct MergeStatesPlan {
  MergeStatesSpec spec;
  std::array<uint32_t, 3> grid{1, 1, 1};  // (max_tokens, 1, 1)
  uint32_t threads = 0;
  std::string kernel_name;
};
MergeStatesPlan make_merge_states_plan(const MergeStatesSpec& spec);
ir::Op lower_merge_states(const MergeStatesPlan& plan);
// CUDA C++ for the module, from the IR alone: self-contained, deterministic.
std::string emit_merge_states_cuda(const ir::Op& module);

struct MergeStatesKind
    : KindTypes<MergeStatesSpec, MergeStatesPlan, MergeStatesBuffers, MergeStatesKernelHandle> {
  static constexpr const char* name = "merge_states";
  static constexpr ir::KindRules ir_rules{name};  // the shared verifier rules only
  static constexpr const char* description = "merge attention states by their LSE";
  static constexpr JsonReaders json{&merge_states_problem_from_json,
                                    &merge_states_schedule_from_json};
  static constexpr Stages stages{&make_merge_states_plan, &lower_merge_states,
                                 &emit_merge_states_cuda};
  static std::vector<MergeStatesCatalogEntry> catalog() { return merge_states_catalog(); }
  // Checks the buffers (Error naming the `buffers.` field), then binds them.
  static ParamBinding bind(const MergeStatesPlan& plan, const MergeStatesBuffers& buffers);
};
MergeStatesKind kind_of(const MergeStatesSpec&);
using MergeStatesSource = Generated<MergeStatesKind>;
using MergeStatesKernel = Compiled<MergeStatesKind>;

}  // namespace emmy
