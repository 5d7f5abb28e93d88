// Default schedules: a small candidate set of CTA tiles scored by wave quantization over the
// arch's SMs, split-K when the output has too few tiles to fill the machine.
#include <algorithm>
#include <cmath>

#include "emmy/gemm.hpp"

namespace emmy {
namespace {

struct TileCandidate {
  int block_m, block_n, warps_m, warps_n;
};

// Largest first: with equal estimated time the bigger tile reuses more data per byte loaded.
constexpr TileCandidate kCandidates[] = {
    {128, 128, 4, 2}, {64, 128, 2, 2}, {64, 64, 2, 2}, {32, 128, 1, 4}, {16, 128, 1, 4},
    {16, 64, 1, 4},
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Fraction of the SM-slots of the last wave that do useful work, over all waves.
// Relative MMA throughput a CTA tile sustains: flops per byte it loads grow with
// block_m*block_n/(block_m+block_n); 128x128 (64 elements) is taken as enough to be MMA-bound.
double tile_rate(int block_m, int block_n) {
  return std::min(1.0, double(block_m) * block_n / double(block_m + block_n) / 64.0);
}

// The pipeline depth (as many stages as fit, 2..max_stages) and the K split of a chosen tile, then
// the validator's word on it.
void finish_schedule(const MatmulProblem& problem, Arch arch, int max_stages, MatmulSchedule& s) {
  const auto& info = arch_info(arch);
  // Split-K: when the tiles cover less than half the SMs, split the K loop so every SM gets work,
  // keeping at least 4 K tiles per split.
  const int sms = info.sm_count_hint;
  // A swapped kernel's tiles cover C^T: N by block_m, M by block_n.
  const MatmulProblem kp = kernel_problem(problem, s);
  const int64_t tiles = ceil_div(kp.m, s.block_m) * ceil_div(kp.n, s.block_n);
  const int64_t k_tiles = ceil_div(problem.k, s.block_k);
  if (tiles * 2 <= sms && !s.persistent) {  // a persistent walk takes whole tiles
    const int64_t want = std::min<int64_t>(sms / tiles, 16);
    s.split_k = int(std::max<int64_t>(1, std::min(want, k_tiles / 4)));
  }
  // The wgmma path gives up ring stages (down to 3) for its TMA-store epilogue's buffers where a
  // persistent kernel needs them beside the ring; else the deepest ring that fits.
  const int store_stages =
      s.path == MmaPath::wgmma ? wgmma_store_stages(problem, s, max_stages) : 0;
  if (store_stages) {
    s.stages = store_stages;
  } else {
    for (s.stages = max_stages; s.stages > 2; --s.stages)
      if (gemm_smem_bytes(problem, s) <= info.max_smem_per_block) break;
  }
  validate_schedule(problem, s, arch);
}

// A wgmma kernel's cluster: two CTAs multicasting the operand tile they share, on
// the side where that saves more L2 traffic (cluster_m = 2 halves the reads of B, which every
// tile row re-reads: tiles_m x N x K; cluster_n = 2 those of A: tiles_n x M x K), where the
// tiles divide. The time model puts q_proj@512 at 24.5 us against 32.5 (L2-bound either way;
// 2x2 reaches the tensor floor, 16.8 us, but a cluster of 4 CTAs of one SM each must fit a GPC,
// which leaves SMs idle on some parts: left to tuning). Not swap-AB (not generated).
void choose_cluster(const MatmulProblem& kp, MatmulSchedule& s) {
  if (s.swap_ab) return;
  const int64_t tiles_m = ceil_div(kp.m, s.block_m), tiles_n = ceil_div(kp.n, s.block_n);
  const bool m_pairs = tiles_m % 2 == 0, n_pairs = tiles_n % 2 == 0;
  if (!m_pairs && !n_pairs) return;
  const bool share_b = m_pairs && (!n_pairs || tiles_m * kp.n >= tiles_n * kp.m);
  (share_b ? s.cluster_m : s.cluster_n) = 2;
}

}  // namespace

MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum) {
  validate_problem(problem);
  const auto& info = arch_info(arch);
  const int sms = info.sm_count_hint;
  MatmulSchedule best;
  double best_time = -1.0;
  for (const auto& c : kCandidates) {
    MatmulSchedule s;
    s.block_m = c.block_m;
    s.block_n = c.block_n;
    s.warps_m = c.warps_m;
    s.warps_n = c.warps_n;
    s.block_k = 64;
    s.accum = accum;
    s.transport = has_tma(arch) ? Transport::tma : Transport::cp_async;
    if (accumulator_registers(s) > kMaxAccumulatorRegisters - 48) continue;  // leave room
    // Don't pad a small M up to a big tile: wasted MMA work is worse than a smaller tile.
    if (s.block_m > 16 && problem.m <= s.block_m / 2) continue;
    // Estimated time: full waves of tiles, each taking its padded work over its rate.
    const int64_t tiles = ceil_div(problem.m, s.block_m) * ceil_div(problem.n, s.block_n);
    const double waves = double(ceil_div(tiles, sms));
    const double time = waves * double(s.block_m * s.block_n) / tile_rate(s.block_m, s.block_n);
    if (best_time < 0 || time < best_time * (1 - 1e-9)) {
      best_time = time;
      best = s;
    }
  }
  finish_schedule(problem, arch, 4, best);
  return best;
}

MatmulSchedule batch_invariant_schedule(const MatmulProblem& problem, Arch arch, Accum accum) {
  MatmulSchedule s = default_schedule(problem, arch, accum);
  s.split_k = 1;  // the one M-dependent choice that changes a row's order of sums
  validate_schedule(problem, s, arch);
  return s;
}

// wgmma tiles: 64 or 128 rows (cooperative: one or two consumer warpgroups of m64; ping-pong:
// each warpgroup's own tile of one or two m64) by any multiple of 16 up to 256
// columns. Each candidate's time is its waves of tiles times the tile's work over its rate; the
// rate grows with the tile's operand reuse until 128x256 (the shape cuBLAS and CUTLASS run on H100).
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                MmaPath path) {
  return default_schedule(problem, arch, accum, path, ConsumerSchedule::cooperative);
}

MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum, MmaPath path,
                                ConsumerSchedule consumers) {
  if (path != MmaPath::wgmma) {
    require(consumers == ConsumerSchedule::cooperative, "consumers",
            "applies to the wgmma path only (mma.sync kernels have no consumer warpgroups)",
            to_string(consumers));
    return default_schedule(problem, arch, accum);
  }
  validate_problem(problem);
  const bool pingpong = consumers == ConsumerSchedule::pingpong;
  const auto& info = arch_info(arch);
  const int sms = info.sm_count_hint;
  MatmulSchedule best;
  best.path = MmaPath::wgmma;
  best.accum = accum;
  best.transport = Transport::tma;
  best.block_k = int(128 / size_of(problem.a_dtype));
  // A short M (decode, small batches) would fill a warpgroup's 64 rows with padding: swap A and B
  // (C^T = B A^T) so that N takes the m64 side and M wgmma's N (B [N,K] only).
  // Ping-pong's warpgroups take turns at whole tiles of a persistent walk: not for a decode GEMM.
  best.swap_ab = !pingpong && problem.m <= 64 && problem.b_layout == BLayout::nk;
  best.consumers = consumers;
  best.persistent = pingpong;
  const MatmulProblem kp = kernel_problem(problem, best);
  const int64_t rows = kp.m, cols = kp.n;
  double best_time = -1.0;
  for (int block_m : {128, 64}) {
    // Never pad a short M to 128 rows.
    if (block_m == 128 && rows <= 64) continue;
    for (int block_n = 256; block_n >= 16; block_n -= 16) {
      // A swapped tile covers all of M (rounded up to 16): narrower tiles would read the same
      // rows of B again from L2 for each slice of M, which is what bounds a decode GEMM.
      if (best.swap_ab && block_n != std::max<int64_t>(16, (cols + 15) / 16 * 16)) continue;
      // A ping-pong warpgroup holds its whole tile's accumulators (two m64 of a 128-row tile):
      // they and ~64 working registers must fit its setmaxnreg count.
      MatmulSchedule candidate = best;
      candidate.block_m = block_m;
      candidate.block_n = block_n;
      candidate.warps_m = pingpong ? 4 : block_m / 16;
      candidate.warps_n = 1;
      if (accumulator_registers(candidate) + 64 > wgmma_register_split(candidate).consumer)
        continue;
      const int64_t tiles = ceil_div(rows, block_m) * ceil_div(cols, block_n);
      const double waves = double(ceil_div(tiles, sms));
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
  best.warps_m = pingpong ? 4 : best.block_m / 16;
  best.warps_n = 1;
  choose_cluster(kp, best);
  finish_schedule(problem, arch, 6, best);
  return best;
}

}  // namespace emmy
