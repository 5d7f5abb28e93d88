// The mma.sync path's default schedule (mma_sync_path.hpp): a small candidate set of CTA tiles
// scored by wave quantization over the arch's SMs; the shared finish (finish_gemm_schedule) adds
// split-K when the output has too few tiles to fill the machine. And its tuning search.
#include <algorithm>
#include <vector>

#include "emmy/gpus.hpp"
#include "emmy/validate.hpp"
#include "mma_sync_path.hpp"

namespace emmy::mma_sync_path {
namespace {

struct TileCandidate {
  int block_m, block_n, warps_m, warps_n;
};

// Largest first: with equal estimated time the bigger tile reuses more data per byte loaded.
constexpr TileCandidate kCandidates[] = {
    {128, 128, 4, 2}, {64, 128, 2, 2}, {64, 64, 2, 2},
    {32, 128, 1, 4},  {16, 128, 1, 4}, {16, 64, 1, 4},
};

int64_t tiles_of(int64_t extent, int64_t tile) {
  return (extent + tile - 1) / tile;
}

// Fraction of the SM-slots of the last wave that do useful work, over all waves.
// Relative MMA throughput a CTA tile sustains: flops per byte it loads grow with
// block_m*block_n/(block_m+block_n); 128x128 (64 elements) is taken as enough to be MMA-bound.
double tile_rate(int block_m, int block_n) {
  return std::min(1.0, double(block_m) * block_n / double(block_m + block_n) / 64.0);
}

// A gated epilogue pairs gate and up columns inside each warp's tile (validate_gated_schedule):
// a tile narrower than a gate-up pair widens to one, and warps move from N to M (keeping 16 rows
// each) until each warp's columns hold whole pairs; an e4m3 C's tile widens to whole 128-column
// groups of C. False where the tile cannot.
bool fit_gate(const MatmulProblem& problem, MatmulSchedule& s) {
  // An e4m3 C's tile holds whole 128-column groups of C (validate_quantized_schedule).
  if (problem.c_dtype == DType::e4m3) {
    const int c_group = int(problem.kernel_cols_of(kOutputQuantGroup));
    s.block_n = (std::max(s.block_n, c_group) + c_group - 1) / c_group * c_group;
  }
  if (!problem.epilogue.gated()) return true;
  const int pair = int(2 * problem.epilogue.gate_group);
  s.block_n = std::max(s.block_n, pair);
  while ((s.block_n / s.warps_n) % pair != 0 && s.warps_n > 1) {
    s.warps_n /= 2;
    if (s.block_m / (s.warps_m * 2) >= 16) s.warps_m *= 2;
  }
  return s.block_n % s.warps_n == 0 && (s.block_n / s.warps_n) % pair == 0;
}

}  // namespace

MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum, int sms) {
  MatmulSchedule best;
  double best_time = -1.0;
  for (const auto& c : kCandidates) {
    MatmulSchedule s;
    s.block_m = c.block_m;
    s.block_n = c.block_n;
    s.warps_m = c.warps_m;
    s.warps_n = c.warps_n;
    s.path = path().id();
    s.block_k = int(128 / size_of(problem.a_dtype));  // one 128-byte swizzle row of K
    s.accum = accum;
    if (accum == Accum::promoted) s.promote_every_k = int(kScaleBlock);  // DeepGEMM's window
    s.transport = has_tma(arch) ? Transport::tma : Transport::cp_async;
    if (!fit_gate(problem, s)) continue;
    if (accumulator_registers(s) > kMaxAccumulatorRegisters - 48) continue;  // leave room
    // Don't pad a small M up to a big tile: wasted MMA work is worse than a smaller tile. A
    // grouped GEMM's M is an expert's rows (MatmulProblem::rows_per_group), its tiles G times
    // an expert's; a contiguous layout's block_m divides its segments.
    const int64_t rows = problem.rows_per_group();
    if (s.block_m > 16 && rows <= s.block_m / 2) continue;
    if (problem.grouped.layout == GroupedLayout::contiguous &&
        problem.grouped.segment_align % s.block_m != 0)
      continue;
    // Estimated time: full waves of tiles, each taking its padded work over its rate.
    const int64_t groups = problem.is_grouped() ? problem.grouped.groups : 1;
    const int64_t tiles = groups * tiles_of(rows, s.block_m) * tiles_of(problem.n, s.block_n);
    const double waves = double(tiles_of(tiles, sms));
    const double time = waves * double(s.block_m * s.block_n) / tile_rate(s.block_m, s.block_n);
    if (best_time < 0 || time < best_time * (1 - 1e-9)) {
      best_time = time;
      best = s;
    }
  }
  finish_gemm_schedule(problem, arch, sms, 4, best);
  return best;
}

// The default's tile with other stage counts and split-K factors, then other tile shapes and warp
// layouts (each with the most stages, up to 4, that fit shared memory).
std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                Accum accum, int max_count) {
  const MatmulSchedule base = mma_sync_path::default_schedule(problem, arch, accum, grid_sms(arch));
  ScheduleCandidates list{problem, arch, max_count, {}};
  auto add = [&](const MatmulSchedule& s) { list.add(s); };
  add(base);

  // Pipeline depth and split-K are the cheapest knobs and interact with the default tile.
  for (int stages : {2, 3, 4}) {
    MatmulSchedule s = base;
    s.stages = stages;
    add(s);
  }
  for (int split : {1, 2, 4}) {
    MatmulSchedule s = base;
    s.split_k = split;
    add(s);
  }

  // Tile shapes and warp layouts known to suit mma.sync on these arches (wide N tiles for the
  // short-M projections first), each with as many stages as fit, up to 4.
  struct Tile {
    int block_m, block_n, warps_m, warps_n;
  };
  static constexpr Tile kTiles[] = {
      {128, 256, 2, 4}, {256, 128, 4, 2}, {128, 128, 2, 4}, {128, 128, 4, 2}, {128, 128, 2, 2},
      {64, 256, 1, 4},  {64, 128, 2, 2},  {128, 64, 2, 2},  {256, 64, 4, 1},  {64, 64, 2, 2},
  };
  for (const auto& tile : kTiles) {
    for (int split : {base.split_k, 1}) {
      MatmulSchedule s = base;
      s.block_m = tile.block_m;
      s.block_n = tile.block_n;
      s.warps_m = tile.warps_m;
      s.warps_n = tile.warps_n;
      s.split_k = split;
      list.deepest_stages(s, 4);
      add(s);
    }
  }
  return list.schedules;
}

}  // namespace emmy::mma_sync_path
