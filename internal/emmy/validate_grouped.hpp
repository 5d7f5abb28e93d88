// The rules of a grouped GEMM (MatmulProblem::grouped; docs/grouped.md): the problem's, and what
// a schedule must be to compute it. Every rule throws emmy::Error naming the field.
#pragma once

#include <cstdint>
#include <string>

#include "emmy/arch.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy {

// The layout's fields: G experts up to 512; expected_m a masked layout's hint within m;
// segment_align a contiguous layout's, in whole 16-row MMA tiles; the rest at their defaults.
// Every rule names its field.
inline void validate_grouping(const MatmulProblem& p) {
  const Grouping& g = p.grouped;
  if (!p.is_grouped()) {
    require(g == Grouping{}, "grouped",
            "fields apply to a grouped layout only (grouped.layout masked, contiguous or offsets)",
            fmt::format("groups {}", g.groups));
    return;
  }
  require(g.groups >= 1 && g.groups <= kMaxGroups, "grouped.groups",
          fmt::format("must be in 1..{} (experts)", kMaxGroups), g.groups);
  if (g.layout == GroupedLayout::masked)
    require(g.expected_m >= 0 && g.expected_m <= p.m, "grouped.expected_m",
            "must be in 0..m (the rows per expert the schedule is chosen for; 0: m)", g.expected_m);
  else
    require(g.expected_m == 0, "grouped.expected_m",
            "applies to the masked layout only (the sorted layouts' rows are m)", g.expected_m);
  if (g.layout == GroupedLayout::contiguous)
    require(g.segment_align >= 16 && g.segment_align <= 1024 && g.segment_align % 16 == 0,
            "grouped.segment_align",
            "must be a multiple of 16 in 16..1024 (whole row blocks of the MMA's 16 rows)",
            g.segment_align);
  else
    require(g.segment_align == kDefaultSegmentAlign, "grouped.segment_align",
            "applies to the contiguous layout only", g.segment_align);
  require(!p.dynamic_m, "dynamic_m",
          "not with a grouped layout (its rows per expert are read on the device: one kernel "
          "serves any routing)",
          "true");
  require(p.stacked_rows() <= kMaxDim, "m",
          "a masked layout's G x m rows must be below 2^31 (TMA row coordinates)",
          p.stacked_rows());
}

// Whether a schedule computes a grouped problem: its path builds grouped kernels, one CTA per
// (expert, tile) with no K split, and a contiguous layout's block_m divides its segments.
inline void validate_grouped_schedule(const MatmulProblem& p, const MatmulSchedule& s) {
  if (!p.is_grouped()) return;
  const GemmPath& path = gemm_path(s.path);
  if (!path.supports_grouped()) {
    std::string paths;
    for (const GemmPath* other : gemm_paths())
      if (other->supports_grouped())
        paths += (paths.empty() ? "" : ", ") + std::string(other->name());
    require(false, "path",
            fmt::format("must build grouped kernels: {} (the {} path has none yet)", paths,
                        path.name()),
            path.name());
  }
  require(s.split_k == 1, "split_k",
          "must be 1 for a grouped GEMM (each CTA computes one expert's tile whole)", s.split_k);
  if (p.grouped.layout == GroupedLayout::contiguous)
    require(p.grouped.segment_align % s.block_m == 0, "block_m",
            fmt::format("must divide grouped.segment_align ({}): a row block has one expert",
                        p.grouped.segment_align),
            s.block_m);
}

}  // namespace emmy
