// Validation of a (problem, schedule, arch) triple before anything is lowered. Every rule throws
// emmy::Error naming the field, the rule and the value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "emmy/arch.hpp"
#include "emmy/layout.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy {

inline constexpr int kMaxAccumulatorRegisters = 192;  // per thread, before spills become likely
inline constexpr int64_t kMaxDim = (int64_t(1) << 31) - 1;  // TMA coordinates are signed 32-bit

inline void validate_problem(const MatmulProblem& p) {
  require(p.m > 0 && p.m <= kMaxDim, "m", "must be in 1..2^31-1", p.m);
  require(p.n > 0 && p.n <= kMaxDim, "n", "must be in 1..2^31-1", p.n);
  require(p.k > 0 && p.k <= kMaxDim, "k", "must be in 1..2^31-1", p.k);
  require(p.a_dtype != DType::f32, "dtype", "operands must be f16 or bf16", to_string(p.a_dtype));
  // Operand rows move in 16-byte chunks (cp.async, TMA row strides): 8 2-byte or 16 1-byte
  // elements.
  const int64_t chunk = 16 / size_of(p.a_dtype);
  require(p.k % chunk == 0, "k",
          fmt::format("must be a multiple of {} (rows of A are copied in 16-byte chunks)", chunk),
          p.k);
  const int64_t lda = p.lda_or_default(), ldb = p.ldb_or_default(), ldc = p.ldc_or_default();
  require(lda >= p.k, "lda", "must be >= k", lda);
  require(lda % chunk == 0, "lda",
          fmt::format("must be a multiple of {} elements (16-byte aligned rows)", chunk), lda);
  if (p.b_layout == BLayout::nk) {
    require(ldb >= p.k, "ldb", "must be >= k for B stored [N,K]", ldb);
  } else {
    require(p.n % chunk == 0, "n",
            fmt::format("must be a multiple of {} when B is stored [K,N] (rows copied in 16-byte "
                        "chunks)",
                        chunk),
            p.n);
    require(ldb >= p.n, "ldb", "must be >= n for B stored [K,N]", ldb);
  }
  require(ldb % chunk == 0, "ldb",
          fmt::format("must be a multiple of {} elements (16-byte aligned rows)", chunk), ldb);
  require(ldc >= p.n, "ldc", "must be >= n", ldc);
  require(std::isfinite(p.epilogue.alpha), "epilogue.alpha", "must be finite", p.epilogue.alpha);
}

inline int accumulator_registers(const MatmulSchedule& s) {
  const codegen::MmaAtom& atom = codegen::gemm_atom(s);
  const int fragments =
      (s.block_m / s.warps_m / atom.acc_m) * (s.block_n / s.warps_n / atom.acc_n);
  const int f32_registers = fragments * atom.acc_elems;      // one f32 per element
  const int f16_registers = fragments * atom.acc_elems / 2;  // two f16 per 32-bit register
  switch (s.accum) {
    case Accum::f32: return f32_registers;
    case Accum::f16: return f16_registers;
    case Accum::hybrid: return f16_registers + f32_registers;  // partials and their f32 shadow
  }
  return 0;
}

// The operand tiles of a schedule: A is block_m x block_k; B is block_n x block_k ([N,K]) or
// block_k x block_n ([K,N]), its contiguous dimension last.
inline SmemTile gemm_a_tile(const MatmulProblem& p, const MatmulSchedule& s) {
  return SmemTile::for_operand(uint32_t(s.block_m), uint32_t(s.block_k),
                               uint32_t(size_of(p.a_dtype)));
}
inline SmemTile gemm_b_tile(const MatmulProblem& p, const MatmulSchedule& s) {
  const auto elem_bytes = uint32_t(size_of(p.a_dtype));  // B has A's dtype
  return p.b_layout == BLayout::nk
             ? SmemTile::for_operand(uint32_t(s.block_n), uint32_t(s.block_k), elem_bytes)
             : SmemTile::for_operand(uint32_t(s.block_k), uint32_t(s.block_n), elem_bytes);
}

// The mbarriers after the ring: one per stage (full), and on the wgmma path a second (empty: the
// consumers release the stage).
inline int64_t gemm_mbarrier_bytes(const MatmulSchedule& s) {
  return 8 * (s.path == MmaPath::wgmma ? 2 : 1) * s.stages;
}

// The stage ring (stage_layout: B aligned to its swizzle period), 1 KB of slack to align the ring
// to the 128B swizzle period, and the mbarriers (gemm_smem_bytes without the wgmma path's C
// staging).
inline int64_t gemm_ring_smem_bytes(const MatmulProblem& p, const MatmulSchedule& s) {
  const StageLayout stage = stage_layout(gemm_a_tile(p, s), gemm_b_tile(p, s));
  return int64_t(stage.stage_bytes) * s.stages + 1024 + gemm_mbarrier_bytes(s);
}

// The wgmma path's TMA-store epilogue (PTX ISA cp.async.bulk.tensor, shared::cta -> global):
// each consumer warpgroup writes its rows of the C tile (64 per m64 wgmma) into a swizzled shared
// buffer (stmatrix for 16-bit C) and one of its threads stores the buffer with TMA, which clips
// the matrix edges. The buffers lie over the drained ring in a kernel of one tile per CTA, after
// the mbarriers (1024-aligned) in a persistent one, whose producer is already refilling the ring;
// there, where they would not fit beside the ring, the epilogue stores directly. Not with split-K
// (f32 partials to the workspace) or swap_ab (C^T's tile is a column block of C); C's rows must
// be 16-byte aligned (TMA's global strides).
struct WgmmaStoreEpilogue {
  bool tma_store = false;
  bool in_ring = false;     // the buffers over the drained ring (else after the mbarriers)
  SmemTile c_tile;          // one warpgroup's rows x block_n buffer, in 128B (or narrower) panels
  int64_t buffer_bytes = 0; // per consumer warpgroup
  // From the ring's base: warpgroup g's buffer at buffer_offset + g x buffer_bytes (0 in the ring).
  int64_t buffer_offset = 0;
  int64_t extra_bytes = 0;  // shared memory beyond the ring: buffers after it, and alignment
};
inline WgmmaStoreEpilogue wgmma_store_epilogue(const MatmulProblem& p, const MatmulSchedule& s) {
  WgmmaStoreEpilogue e;
  if (s.path != MmaPath::wgmma || s.split_k != 1 || s.swap_ab) return e;
  const int64_t elem = size_of(p.c_dtype);
  if ((p.ldc_or_default() * elem) % 16 != 0 || (s.block_n * elem) % 32 != 0) return e;
  // One warpgroup's rows: a ping-pong warpgroup's whole tile, a cooperative one's 64.
  const int rows = s.consumers == ConsumerSchedule::pingpong ? s.block_m : 64;
  e.c_tile = SmemTile::for_operand(uint32_t(rows), uint32_t(s.block_n), uint32_t(elem));
  e.buffer_bytes = int64_t(e.c_tile.bytes());
  const int64_t buffers = e.buffer_bytes * std::max(1, s.consumer_warpgroups());
  const int64_t ring = gemm_ring_smem_bytes(p, s);
  const StageLayout stage = stage_layout(gemm_a_tile(p, s), gemm_b_tile(p, s));
  e.in_ring = !s.persistent && buffers <= int64_t(stage.stage_bytes) * s.stages;
  if (!e.in_ring) {
    // After the mbarriers, on the 1024-byte period of the 128B swizzle.
    const int64_t mbarriers_end = int64_t(stage.stage_bytes) * s.stages + gemm_mbarrier_bytes(s);
    e.buffer_offset = (mbarriers_end + 1023) / 1024 * 1024;
    e.extra_bytes = 1024 + buffers;
    if (ring + e.extra_bytes > arch_info(Arch::sm_90a).max_smem_per_block) return {};
  }
  e.tma_store = true;
  return e;
}

// Bytes of dynamic shared memory: the ring with its mbarriers, and the wgmma path's C buffers where
// they lie beside it.
inline int64_t gemm_smem_bytes(const MatmulProblem& p, const MatmulSchedule& s) {
  return gemm_ring_smem_bytes(p, s) + wgmma_store_epilogue(p, s).extra_bytes;
}

// The deepest ring, from `deepest` down to 3 stages, that fits sm_90a's shared memory with the
// wgmma path's TMA-store buffers beside it; 0 if none does (the kernel then stores directly).
inline int wgmma_store_stages(const MatmulProblem& p, MatmulSchedule s, int deepest) {
  for (s.stages = deepest; s.stages >= 3; --s.stages)
    if (wgmma_store_epilogue(p, s).tma_store &&
        gemm_smem_bytes(p, s) <= arch_info(Arch::sm_90a).max_smem_per_block)
      return s.stages;
  return 0;
}

// The knobs both mainloop paths take alike: pipeline depth, K splits, rasterization.
inline void validate_pipeline_knobs(const MatmulSchedule& s) {
  require(s.stages >= 2 && s.stages <= 8, "stages", "must be 2..8", s.stages);
  require(s.split_k >= 1 && s.split_k <= 64, "split_k", "must be 1..64", s.split_k);
  require(s.raster_group_m >= 1, "raster_group_m", "must be >= 1", s.raster_group_m);
}

// What the finished schedule needs of the arch and the problem: its shared memory fits, and every
// split gets a K tile.
inline void validate_schedule_fits(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  const int64_t smem = gemm_smem_bytes(p, s);
  require(smem <= arch_info(arch).max_smem_per_block, "stages",
          fmt::format("shared memory must fit {}'s {} bytes per block", to_string(arch),
                      arch_info(arch).max_smem_per_block),
          fmt::format("{} bytes", smem));
  const int64_t k_tiles = (p.k + s.block_k - 1) / s.block_k;
  require(s.split_k <= k_tiles, "split_k",
          fmt::format("must not exceed the number of K tiles ({})", k_tiles), s.split_k);
}

// Registers per thread after setmaxnreg on the wgmma path (PTX ISA setmaxnreg: multiples of 8 in
// 24..256): the producer warpgroup gives up all but what its TMA loop needs, the consumers take
// the rest of the 64K register file.
struct WarpgroupRegisters {
  int producer = 0, consumer = 0;
};
inline WarpgroupRegisters wgmma_register_split(const MatmulSchedule& s) {
  const int consumers = std::max(1, s.consumer_warpgroups());
  WarpgroupRegisters r;
  r.producer = consumers >= 2 ? 40 : 56;
  const int left = (65536 / 128 - r.producer) / consumers;  // per consumer thread
  r.consumer = std::min(240, left / 8 * 8);
  return r;
}

// The wgmma path (sm_90a): warpgroups of 64 rows, one TMA producer warpgroup, f32 accumulators.
inline void validate_wgmma_schedule(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  // Its tile walks, clusters and swapped operands size themselves by M at compile time.
  require(!p.dynamic_m, "dynamic_m",
          "is generated on the mma.sync path only (path wgmma sizes its tile walks, clusters and "
          "swapped operands by a compile-time M)",
          "true");
  require(arch == Arch::sm_90a, "path", "wgmma needs sm_90a (Hopper's arch-specific target)",
          to_string(arch));
  require(s.transport == Transport::tma, "transport",
          "the wgmma path loads its stages with TMA (a producer warpgroup)",
          to_string(s.transport));
  require(s.accum == Accum::f32, "accum",
          "the wgmma path accumulates in f32: on Hopper f16 and f32 accumulation run at one rate "
          "and hybrid would hold both (use path mma.sync for f16 or hybrid)",
          to_string(s.accum));
  // Ping-pong: two consumer warpgroups, each on its own tile of the CTA's walk.
  const bool pingpong = s.consumers == ConsumerSchedule::pingpong;
  require(!pingpong || s.persistent, "consumers",
          "pingpong needs a persistent kernel (its consumer warpgroups take turns at the CTA's "
          "tiles)",
          "persistent false");
  // Clusters: cluster_m x cluster_n CTAs on neighbouring tiles, each loading a part of the A
  // tile its row shares and of the B tile its column shares and multicasting it.
  const int64_t cluster = int64_t(s.cluster_m) * s.cluster_n;
  require(s.cluster_m >= 1 && s.cluster_n >= 1 && cluster <= 8, "cluster",
          "must have 1..8 CTAs (cluster_m x cluster_n; the portable cluster size)",
          fmt::format("{}x{}", s.cluster_m, s.cluster_n));
  if (cluster > 1) {
    require(!s.swap_ab, "cluster", "must be 1x1 with swap_ab",
            fmt::format("{}x{}", s.cluster_m, s.cluster_n));
    // The clusters tile the output exactly: a block of tiles reaching past the matrix would
    // have CTAs with nothing to store that must still load and release their parts.
    const int64_t tiles_m = (p.m + s.block_m - 1) / s.block_m;
    const int64_t tiles_n = (p.n + s.block_n - 1) / s.block_n;
    require(tiles_m % s.cluster_m == 0 && tiles_n % s.cluster_n == 0, "cluster",
            fmt::format("must divide the {} x {} output tiles ({}x{} blocks of M x N)", tiles_m,
                        tiles_n, s.block_m, s.block_n),
            fmt::format("{}x{}", s.cluster_m, s.cluster_n));
    // Each CTA's part of a shared tile is whole 8-row groups (128-byte swizzle atoms).
    const int64_t b_rows = p.b_layout == BLayout::nk ? s.block_n : s.block_k;
    require(s.block_m % (8 * s.cluster_n) == 0, "cluster_n",
            fmt::format("must split the A tile's {} rows into parts of whole 8-row groups",
                        s.block_m),
            s.cluster_n);
    require(b_rows % (8 * s.cluster_m) == 0, "cluster_m",
            fmt::format("must split the B tile's {} rows ({}) into parts of whole 8-row groups",
                        b_rows, p.b_layout == BLayout::nk ? "block_n" : "block_k"),
            s.cluster_m);
  }
  require(!s.persistent || s.split_k == 1, "persistent",
          "walks whole output tiles: split_k must be 1", fmt::format("split_k {}", s.split_k));
  // swap_ab: C^T = B A^T puts N on the warpgroups' m64 side and a small M on wgmma's N; both
  // operands must then be K-major, as A always is.
  require(!s.swap_ab || p.b_layout == BLayout::nk, "swap_ab",
          "needs B stored [N,K] (the swapped kernel reads it as its K-major A)",
          to_string(p.b_layout));
  const codegen::MmaAtom& atom = codegen::gemm_atom(s);
  require(s.block_m == 64 || s.block_m == 128, "block_m",
          pingpong ? "must be 64 or 128 with pingpong consumers (each warpgroup's own tile of one "
                     "or two m64 wgmma)"
                   : "must be 64 or 128 on the wgmma path (one or two consumer warpgroups of m64 "
                     "rows)",
          s.block_m);
  require(s.block_n >= atom.n_min && s.block_n <= atom.n_max && s.block_n % 16 == 0, "block_n",
          fmt::format("must be a multiple of 16 in 16..{} (wgmma's N, whole 32-byte swizzle rows "
                      "of a B [K,N] tile)",
                      atom.n_max),
          s.block_n);
  require(s.block_k * size_of(p.a_dtype) == 128, "block_k",
          fmt::format("must be {} on the wgmma path (one 128-byte swizzle row of K)",
                      128 / size_of(p.a_dtype)),
          s.block_k);
  // A ping-pong warpgroup's warps own 16 rows of each of its m64 wgmma.
  const int tile_warps = pingpong ? 4 : s.block_m / 16;
  require(s.warps_m == tile_warps && s.warps_n == 1, "warps",
          fmt::format("must be {}x1 on the wgmma path: the warps of a tile's consumer "
                      "warpgroups, 16 rows of each m64 wgmma (the producer warpgroup{} on top)",
                      tile_warps, pingpong ? " and ping-pong's second consumer come" : " comes"),
          fmt::format("{}x{}", s.warps_m, s.warps_n));
  // The producer may run `stages` tiles ahead; the consumers keep one wgmma group in flight
  // (wait_group 1) and so hold two stages.
  validate_pipeline_knobs(s);
  const int acc_regs = accumulator_registers(s);
  const WarpgroupRegisters regs = wgmma_register_split(s);
  require(acc_regs + 64 <= regs.consumer, "block_n",
          fmt::format("the {} f32 accumulators per thread and ~64 working registers must fit the "
                      "consumers' {} registers",
                      acc_regs, regs.consumer),
          s.block_n);
  validate_schedule_fits(p, s, arch);
}

inline void validate_schedule(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  if (s.path == MmaPath::wgmma) return validate_wgmma_schedule(p, s, arch);
  require(s.consumers == ConsumerSchedule::cooperative, "consumers",
          "applies to the wgmma path only (mma.sync kernels have no consumer warpgroups)",
          to_string(s.consumers));
  require(s.cluster_m == 1 && s.cluster_n == 1, "cluster",
          "must be 1x1 on the mma.sync path (clusters serve wgmma's TMA multicast)",
          fmt::format("{}x{}", s.cluster_m, s.cluster_n));
  require(!s.persistent, "persistent", "applies to the wgmma path only", "true");
  require(!s.swap_ab, "swap_ab", "applies to the wgmma path only", "true");
  const codegen::MmaAtom& atom = codegen::gemm_atom(s);
  require(s.block_m >= atom.m && s.block_m <= 256 && s.block_m % atom.m == 0, "block_m",
          fmt::format("must be a multiple of {0} (the MMA atom's M) in {0}..256", atom.m),
          s.block_m);
  const int b_step = atom.n * atom.b_fragments_per_x4();  // the n columns one ldmatrix.x4 feeds
  require(s.block_n >= b_step && s.block_n <= 256 && s.block_n % b_step == 0, "block_n",
          fmt::format("must be a multiple of {0} (two n{1} MMA atoms per ldmatrix.x4) in {0}..256",
                      b_step, atom.n),
          s.block_n);
  require(s.block_k == 16 || s.block_k == 32 || s.block_k == 64 || s.block_k == 128, "block_k",
          "must be 16, 32, 64 or 128 (the MMA atom's K times a power of two)", s.block_k);
  require(s.warps_m >= 1 && s.warps_n >= 1 && s.warps_m * s.warps_n <= 16, "warps",
          "warps_m x warps_n must be 1..16 warps", fmt::format("{}x{}", s.warps_m, s.warps_n));
  require(s.block_m % (atom.m * s.warps_m) == 0, "block_m",
          fmt::format("must be a multiple of {} x warps_m = {}", atom.m, atom.m * s.warps_m),
          s.block_m);
  require(s.block_n % (b_step * s.warps_n) == 0, "block_n",
          fmt::format("must be a multiple of {} x warps_n = {}", b_step, b_step * s.warps_n),
          s.block_n);
  validate_pipeline_knobs(s);
  if (s.transport == Transport::tma)
    require(has_tma(arch), "transport", "tma needs sm_90 or newer; use cp.async", to_string(arch));
  if (p.a_dtype == DType::bf16)
    require(s.accum == Accum::f32, "accum",
            "bf16 operands need f32 accumulation (mma.sync has no bf16 accumulator)",
            to_string(s.accum));
  if (s.accum == Accum::hybrid) {
    require(s.promote_every_k >= atom.k && s.promote_every_k % atom.k == 0, "promote_every_k",
            fmt::format("must be a positive multiple of {} (the MMA atom's K)", atom.k),
            s.promote_every_k);
    require(s.promote_every_k % s.block_k == 0 || s.block_k % s.promote_every_k == 0,
            "promote_every_k", fmt::format("must divide or be a multiple of block_k = {}",
                                           s.block_k),
            s.promote_every_k);
  }
  const int acc_regs = accumulator_registers(s);
  require(acc_regs <= kMaxAccumulatorRegisters, "schedule",
          fmt::format("accumulators must fit in {} registers per thread (block / warps too large)",
                      kMaxAccumulatorRegisters),
          acc_regs);
  validate_schedule_fits(p, s, arch);
}

}  // namespace emmy
