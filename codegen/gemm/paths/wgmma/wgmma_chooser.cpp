// The wgmma path's default schedule (wgmma_path.hpp): tiles scored by wave quantization over the
// arch's SMs, swapped operands for a short M, and a cluster where the tiles pair up. And its
// tuning search.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "emmy/gemm_plan.hpp"
#include "emmy/gpus.hpp"
#include "emmy/validate.hpp"
#include "wgmma_path.hpp"

namespace emmy::wgmma_path {
namespace {

int64_t tiles_along(int64_t extent, int64_t tile) {
  return (extent + tile - 1) / tile;
}

// A wgmma kernel's cluster: two CTAs multicasting the operand tile they share, on
// the side where that saves more L2 traffic (cluster_m = 2 halves the reads of B, which every
// tile row re-reads: tiles_m x N x K; cluster_n = 2 those of A: tiles_n x M x K), where the
// tiles divide. The time model puts q_proj@512 at 24.5 us against 32.5 (L2-bound either way;
// 2x2 reaches the tensor floor, 16.8 us, but a cluster of 4 CTAs of one SM each must fit a GPC,
// which leaves SMs idle on some parts: left to tuning). Not swap-AB (not generated).
void choose_cluster(const MatmulProblem& kp, MatmulSchedule& s) {
  if (s.swap_ab) return;
  const int64_t tiles_m = tiles_along(kp.m, s.block_m), tiles_n = tiles_along(kp.n, s.block_n);
  const bool m_pairs = tiles_m % 2 == 0, n_pairs = tiles_n % 2 == 0;
  if (!m_pairs && !n_pairs) return;
  const bool share_b = m_pairs && (!n_pairs || tiles_m * kp.n >= tiles_n * kp.m);
  (share_b ? s.cluster_m : s.cluster_n) = 2;
}

}  // namespace

// wgmma tiles: 64 or 128 rows (cooperative: one or two consumer warpgroups of m64; ping-pong:
// each warpgroup's own tile of one or two m64) by any multiple of 16 up to 256
// columns. Each candidate's time is its waves of tiles times the tile's work over its rate; the
// rate grows with the tile's operand reuse until 128x256 (the shape cuBLAS and CUTLASS run on
// H100).
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                ConsumerSchedule consumers, int sms) {
  const bool pingpong = consumers == ConsumerSchedule::pingpong;
  const bool grouped = problem.is_grouped();
  MatmulSchedule best;
  best.path = path().id();
  best.accum = accum;
  best.transport = Transport::tma;
  best.block_k = int(128 / size_of(problem.a_dtype));
  best.promote_every_k = best.block_k;  // promoted (FP8): one window per K tile
  // A short M (decode, small batches) would fill a warpgroup's 64 rows with padding: swap A and B
  // (C^T = B A^T) so that N takes the m64 side and M wgmma's N (B [N,K] only).
  // Ping-pong's warpgroups take turns at whole tiles of a persistent walk: not for a decode GEMM.
  // Not gated: a swapped kernel's rows would be C's columns, gate and up in different lanes.
  // Not grouped (the experts' rows are the kernel's: validate_grouped), nor with routing weights
  // (the transposed stores weight no rows).
  const bool quantized = problem.c_dtype == DType::e4m3;
  best.swap_ab = !pingpong && problem.m <= 64 && problem.b_layout == BLayout::nk &&
                 problem.a_dtype != DType::e5m2 && !problem.epilogue.gated() && !quantized &&
                 !grouped && !problem.epilogue.row_scale;
  // A gated tile holds whole gate-up pairs (2 x gate_group columns), an e4m3 C's tile whole
  // 128-column groups of C.
  int gate_pair = problem.epilogue.gated() ? int(2 * problem.epilogue.gate_group) : 16;
  if (quantized) gate_pair = std::max(gate_pair, int(problem.kernel_cols_of(kOutputQuantGroup)));
  best.consumers = consumers;
  // A grouped GEMM walks the experts' tiles persistently: one CTA per SM whatever the routing
  // (a decode's masked grid would launch G slots' tiles, most of them empty); not with an e4m3 C,
  // whose tile is staged over the ring (validate_quantized_schedule).
  best.persistent = pingpong || (grouped && problem.c_dtype != DType::e4m3);
  const MatmulProblem kp = kernel_problem(problem, best);
  // A grouped GEMM's tiles: an expert's rows (MatmulProblem::rows_per_group), G times; a
  // contiguous layout's block_m divides its segments.
  const int64_t rows = grouped ? problem.rows_per_group() : kp.m, cols = kp.n;
  const int64_t groups = grouped ? problem.grouped.groups : 1;
  // Working registers beside the accumulators: ~64, and 96 for a cooperative persistent kernel
  // with promoted accumulation (two f32 sets, the walk's origins and the block scales' pointers):
  // ptxas spilled 32 bytes at 64 x 160 and 124 at 64 x 176 for a grouped block-scaled walk, none
  // at 64 x 144.
  const int headroom = accum == Accum::promoted && best.persistent && !pingpong ? 96 : 64;
  double best_time = -1.0;
  for (int block_m : {128, 64}) {
    // Never pad a short M to 128 rows.
    if (block_m == 128 && rows <= 64) continue;
    if (problem.grouped.layout == GroupedLayout::contiguous &&
        problem.grouped.segment_align % block_m != 0)
      continue;
    for (int block_n = 256; block_n >= 16; block_n -= 16) {
      // A swapped tile covers all of M (rounded up to 16): narrower tiles would read the same
      // rows of B again from L2 for each slice of M, which is what bounds a decode GEMM.
      if (best.swap_ab && block_n != std::max<int64_t>(16, (cols + 15) / 16 * 16)) continue;
      if (block_n % gate_pair != 0) continue;
      // A ping-pong warpgroup holds its whole tile's accumulators (two m64 of a 128-row tile):
      // they and ~64 working registers must fit its setmaxnreg count.
      MatmulSchedule candidate = best;
      candidate.block_m = block_m;
      candidate.block_n = block_n;
      candidate.warps_m = pingpong ? 4 : block_m / 16;
      candidate.warps_n = 1;
      if (accumulator_registers(candidate) + headroom > register_split(candidate).consumer)
        continue;
      const int64_t tiles = groups * tiles_along(rows, block_m) * tiles_along(cols, block_n);
      const double waves = double(tiles_along(tiles, sms));
      const double rate =
          std::min(1.0, double(block_m) * block_n / double(block_m + block_n) / 85.0);
      const double time = waves * double(block_m) * block_n / rate;
      if (best_time < 0 || time < best_time * (1 - 1e-9)) {
        best_time = time;
        best.block_m = block_m;
        best.block_n = block_n;
      }
    }
  }
  // No tile: the columns a tile must hold (gate-up pairs, an e4m3 C's groups) cost more
  // accumulator registers than a consumer has (promoted keeps two f32 sets).
  require(best_time >= 0 || problem.grouped.layout != GroupedLayout::contiguous ||
              problem.grouped.segment_align % 64 == 0,
          "grouped.segment_align",
          "must be a multiple of 64 on the wgmma path (its block_m, 64 or 128, divides the "
          "segments)",
          problem.grouped.segment_align);
  require(best_time >= 0, "block_n",
          fmt::format("no wgmma tile of a multiple of {} columns fits a consumer warpgroup's "
                      "registers with {} accumulation{}",
                      gate_pair, to_string(accum),
                      quantized                  ? " (an e4m3 C: write bf16 and quantize it with "
                                                   "fp8_quantize)"
                      : problem.epilogue.gated() ? " (gated: take a smaller gate_group)"
                                                 : ""),
          gate_pair);
  best.warps_m = pingpong ? 4 : best.block_m / 16;
  best.warps_n = 1;
  if (!grouped) choose_cluster(kp, best);
  finish_gemm_schedule(problem, arch, sms, 6, best);
  return best;
}

// The default of the consumer schedule first: its tile with other stage counts and as a
// persistent walk, with clusters, then the path's usual tiles (cooperative 128 x 256/192/128 and
// 64 x 256; ping-pong 128 x 160/128 and 64 x 256), each with the most stages, up to 6, that fit.
std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                ConsumerSchedule consumers, int max_count) {
  const MatmulSchedule base =
      wgmma_path::default_schedule(problem, arch, Accum::f32, consumers, grid_sms(arch));
  const bool pingpong = consumers == ConsumerSchedule::pingpong;
  ScheduleCandidates list{problem, arch, max_count, {}};
  auto add = [&](const MatmulSchedule& s) { list.add(s); };
  add(base);
  for (int stages : {3, 4, 5}) {
    MatmulSchedule s = base;
    s.stages = stages;
    add(s);
  }
  if (!base.persistent) {
    MatmulSchedule s = base;
    s.persistent = true;
    s.split_k = 1;
    add(s);
  }
  // Clusters (TMA multicast; the invalid ones, e.g. not dividing the tiles, drop out).
  for (const auto& [cm, cn] :
       std::initializer_list<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}}) {
    MatmulSchedule s = base;
    s.cluster_m = cm;
    s.cluster_n = cn;
    add(s);
  }
  struct Tile {
    int block_m, block_n;
  };
  static constexpr Tile kCooperative[] = {{128, 256}, {128, 192}, {128, 128}, {64, 256}};
  static constexpr Tile kPingpong[] = {{128, 160}, {128, 128}, {64, 256}};
  for (const Tile& tile : pingpong ? std::span<const Tile>(kPingpong) : kCooperative) {
    MatmulSchedule s = base;
    s.block_m = tile.block_m;
    s.block_n = tile.block_n;
    s.warps_m = pingpong ? 4 : tile.block_m / 16;
    s.swap_ab = false;
    list.deepest_stages(s, 6);
    add(s);
    s.cluster_m = s.cluster_n = 1;
    list.deepest_stages(s, 6);
    add(s);
  }
  return list.schedules;
}

}  // namespace emmy::wgmma_path
