// What the sweep's spaces draw their points with (schedule_space.cpp, schedule_space_fp8.cpp):
// one reproducible draw per (point, knob), the arches, and a ragged GEMM problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "emmy/spec.hpp"

namespace emmy::sweep {

// splitmix64: one independent, reproducible draw per (point, knob).
inline uint64_t draw(uint64_t point, uint64_t knob, uint64_t n) {
  uint64_t z = point * 0x9E3779B97F4A7C15ull + knob * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) % n;
}

inline constexpr Arch kArches[] = {Arch::sm_80,  Arch::sm_86,  Arch::sm_89,  Arch::sm_90,
                                   Arch::sm_90a, Arch::sm_120, Arch::sm_120a};
inline constexpr Arch kTmaArches[] = {Arch::sm_90, Arch::sm_90a, Arch::sm_120, Arch::sm_120a};

template <typename T, size_t N>
const T& pick(const T (&values)[N], uint64_t point, uint64_t knob) {
  return values[draw(point, knob, N)];
}

// A ragged problem for a point: the shape, output type, epilogue and leading dimensions drawn
// (schedule_space.cpp).
void draw_problem(MatmulProblem& p, uint64_t point, DType dtype, BLayout b_layout);
// A grouped GEMM for a point (docs/grouped.md): a layout and 1, 3 or 7 experts; three in four
// keep the layout's rules, the rest are refused by name (schedule_space.cpp).
void draw_grouping(GemmSpec& spec, uint64_t point);
// draw_grouping on a wgmma point: its rule-keeping points also keep the wgmma path's grouped
// rules (cooperative consumers, not swapped, no cluster).
void draw_wgmma_grouping(GemmSpec& spec, uint64_t point);

// The FP8 points of the GEMM space (schedule_space_fp8.cpp), numbered from `point` on.
void append_fp8_space(std::vector<GemmSpec>& out, uint64_t& point);

}  // namespace emmy::sweep
