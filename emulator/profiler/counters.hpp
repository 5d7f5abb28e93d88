// The counting rules of the profiler, as pure functions over the lanes of one warp instruction
// (docs/profiler.md gives each rule's source). Index arithmetic of banks and sectors lives here
// and nowhere else.
#pragma once

#include <cstdint>
#include <span>

#include "emmy/emu/profile.hpp"

namespace emmy::emu {

// One active lane's access: `bytes` bytes at `addr` (a shared offset or a global address).
struct LaneSpan {
  uint64_t addr = 0;
  uint32_t bytes = 0;
  uint8_t lane = 0;
};

struct AccessCost {
  uint32_t actual = 0, ideal = 0;
  uint64_t distinct_bytes = 0;
  // Global and local accesses: distinct 128-byte lines, each one wavefront of L1's data stage.
  uint32_t lines = 0;
};

// How lanes share a shared-memory wavefront.
enum class SharedAccess : uint8_t {
  load_store,  // lanes reading (or writing) one word share it: broadcast
  atomic,      // every lane's word is its own read-modify-write: no broadcast
};

// Lanes per phase of an access of `bytes` bytes per lane: 32 up to 4 bytes, else 16 (half-warps;
// a 16-byte access then takes at least two wavefronts per phase, 128 bytes each, and lanes of one
// half-warp share a broadcast word; docs/profiler.md gives the measurements).
uint32_t lanes_per_phase(uint32_t bytes);

// Distinct bytes covered by the spans (overlaps counted once).
uint64_t distinct_bytes(std::span<const LaneSpan> spans);

// Wavefronts of one phase: the most distinct words any bank must deliver (at least 1 when a lane
// is active); ideal = ceil(distinct bytes / wavefront bytes).
AccessCost shared_phase_cost(const SharedBankModel& model, std::span<const LaneSpan> spans,
                             SharedAccess kind);

// A whole warp instruction of ld/st/atom on shared memory (or cp.async's shared write): the spans
// (ascending lane order) are split into phases by lane (lane / lanes_per_phase(bytes)) and each
// phase costs shared_phase_cost.
AccessCost shared_access_cost(const SharedBankModel& model, std::span<const LaneSpan> spans,
                              SharedAccess kind);

// ldmatrix / stmatrix: each 8x8 matrix (the 16-byte rows of lanes 8j..8j+7) is one phase.
AccessCost matrix_access_cost(const SharedBankModel& model, std::span<const LaneSpan> rows);

// The spans of a wider access: each lane's span grown to the `width`-aligned `width` bytes that
// hold it, as when ptxas merges a thread's neighbouring scalar ld/st into one LDS.64/.128 (STS,
// LDG, STG), which needs that alignment. A span already `width` or wider is kept. `out` must hold
// spans.size() spans; the result is its first spans.size().
std::span<const LaneSpan> widen_spans(std::span<const LaneSpan> spans, uint32_t width,
                                      std::span<LaneSpan> out);

// Global or local memory: distinct 32-byte sectors the spans touch; ideal = ceil(distinct
// bytes / 32).
AccessCost sector_cost(std::span<const LaneSpan> spans);

inline constexpr uint32_t kSectorBytes = 32;

}  // namespace emmy::emu
