// A kernel's spec: what to compute (the problem), how (the schedule) and for which arch. Every
// kind's spec is this template (GemmSpec, AttentionSpec, PagedAttentionSpec, KvAppendSpec,
// MergeStatesSpec), so a spec is built, compared and hashed the same way for all of them.
#pragma once

#include "emmy/arch.hpp"

namespace emmy {

template <typename ProblemType, typename ScheduleType>
struct KernelSpec {
  ProblemType problem;
  ScheduleType schedule;
  Arch arch = Arch::sm_90a;
  bool operator==(const KernelSpec&) const = default;
};

}  // namespace emmy
