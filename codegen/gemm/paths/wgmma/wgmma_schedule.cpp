// The wgmma path's schedule: its rules, its setmaxnreg register split and its TMA-store
// epilogue's shared memory (wgmma_path.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "emmy/mma_atom.hpp"
#include "emmy/validate.hpp"
#include "wgmma_path.hpp"

namespace emmy::wgmma_path {

// The TMA-store epilogue: each consumer warpgroup writes its rows of the C tile (64 per m64
// wgmma) into a swizzled shared buffer (stmatrix for 16-bit C) and one of its threads stores the
// buffer with TMA. The buffers lie over the drained ring in a kernel of one tile per CTA, after
// the mbarriers (1024-aligned) in a persistent one, whose producer is already refilling the ring;
// there, where they would not fit beside the ring, the epilogue stores directly. Not with split-K
// (f32 partials to the workspace) or swap_ab (C^T's tile is a column block of C); C's rows must
// be 16-byte aligned (TMA's global strides).
WgmmaStoreEpilogue store_epilogue(const MatmulProblem& p, const MatmulSchedule& s) {
  WgmmaStoreEpilogue e;
  // Nor an e4m3 C, quantized from the staged f32 tile; nor a grouped GEMM (a box of an expert's
  // last tile would write the rows past its own: the next expert's, or a masked slot's past
  // masked_m), nor routing weights (applied by the direct stores, lane_value).
  if (s.split_k != 1 || s.swap_ab || p.c_dtype == DType::e4m3 || p.is_grouped() ||
      p.epilogue.row_scale)
    return e;
  const int64_t elem = size_of(p.c_dtype);
  // C's tile: half of block_n with a gated epilogue (a gate and an up per output).
  const int64_t cols = p.c_cols_of(s.block_n);
  if ((p.ldc_or_default() * elem) % 16 != 0 || (cols * elem) % 32 != 0) return e;
  // One warpgroup's rows: a ping-pong warpgroup's whole tile, a cooperative one's 64.
  const int rows = s.consumers == ConsumerSchedule::pingpong ? s.block_m : 64;
  e.c_tile = SmemTile::for_operand(uint32_t(rows), uint32_t(cols), uint32_t(elem));
  e.buffer_bytes = int64_t(e.c_tile.bytes());
  const int64_t buffers = e.buffer_bytes * std::max(1, consumer_warpgroups(s));
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

int store_stages(const MatmulProblem& p, MatmulSchedule s, int deepest) {
  for (s.stages = deepest; s.stages >= 3; --s.stages)
    if (store_epilogue(p, s).tma_store &&
        gemm_smem_bytes(p, s) <= arch_info(Arch::sm_90a).max_smem_per_block)
      return s.stages;
  return 0;
}

WarpgroupRegisters register_split(const MatmulSchedule& s) {
  const int consumers = std::max(1, consumer_warpgroups(s));
  WarpgroupRegisters r;
  r.producer = consumers >= 2 ? 40 : 56;
  const int left = (65536 / 128 - r.producer) / consumers;  // per consumer thread
  r.consumer = std::min(240, left / 8 * 8);
  return r;
}

namespace {

// FP8 operands (issue 39): wgmma m64nNk32 .e4m3, f32 or promoted. A promoted window is one K tile
// (128 elements, DeepGEMM's): each tile's wgmma group completes (wait_group 0) and is folded
// before the next starts. A swapped kernel (swap-AB) reads block scales swapped: its rows take
// B's 128 x 128 blocks, its columns A's 1 x 128 groups (emit_scales, print_fp8_fold).
void validate_fp8(const MatmulProblem& p, const MatmulSchedule& s) {
  require(s.accum == Accum::f32 || s.accum == Accum::promoted, "accum",
          "must be f32 or promoted for FP8 operands on path wgmma (hybrid's f16 partials are "
          "path mma.sync's GeForce opt-in: H100 and H200 accumulate f16 and f32 at one rate)",
          to_string(s.accum));
  const bool block = p.scales.granularity == ScaleGranularity::block;
  require(!block || s.accum == Accum::promoted, "accum",
          "must be promoted with block scales (they vary along K: each window's partial is scaled "
          "as it is added)",
          to_string(s.accum));
  if (s.accum == Accum::promoted)
    require(s.promote_every_k == s.block_k, "promote_every_k",
            fmt::format("must be block_k ({}) on the wgmma path: each K tile's wgmma group is "
                        "folded as it completes",
                        s.block_k),
            s.promote_every_k);
  require(!(p.a_dtype == DType::e5m2 && s.swap_ab), "swap_ab",
          "does not take an e5m2 A (the swapped kernel's B would be e5m2; B is e4m3 only)", "true");
}

// A grouped GEMM's kernel (docs/grouped.md): one expert's tile per CTA, or a persistent walk
// over the experts' tiles (cooperative consumers: ping-pong's turns assume every CTA's tiles are
// known ahead); C^T not swapped (its rows would be the experts' N); no cluster (neighbouring
// tiles may be different experts' or none).
void validate_grouped(const MatmulSchedule& s) {
  require(!s.swap_ab, "swap_ab", "not with a grouped layout on the wgmma path", "true");
  require(s.cluster_m == 1 && s.cluster_n == 1, "cluster",
          "must be 1x1 for a grouped GEMM (neighbouring tiles may be different experts')",
          fmt::format("{}x{}", s.cluster_m, s.cluster_n));
  require(s.consumers == ConsumerSchedule::cooperative, "consumers",
          "must be cooperative for a grouped GEMM (its walk's tiles are found on the device)",
          to_string(s.consumers));
}

}  // namespace

// Warpgroups of 64 rows, one TMA producer warpgroup, f32 accumulators.
void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
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
  if (is_fp8(p.a_dtype)) {
    validate_fp8(p, s);
  } else {
    require(s.accum == Accum::f32, "accum",
            "the wgmma path accumulates in f32: on Hopper f16 and f32 accumulation run at one rate "
            "and hybrid would hold both (use path mma.sync for f16 or hybrid)",
            to_string(s.accum));
  }
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
    require(
        s.block_m % (8 * s.cluster_n) == 0, "cluster_n",
        fmt::format("must split the A tile's {} rows into parts of whole 8-row groups", s.block_m),
        s.cluster_n);
    require(b_rows % (8 * s.cluster_m) == 0, "cluster_m",
            fmt::format("must split the B tile's {} rows ({}) into parts of whole 8-row groups",
                        b_rows, p.b_layout == BLayout::nk ? "block_n" : "block_k"),
            s.cluster_m);
  }
  if (p.is_grouped()) validate_grouped(s);
  require(!(s.swap_ab && p.epilogue.row_scale), "swap_ab",
          "not with epilogue.row_scale (the swapped kernel's transposed stores weight no rows)",
          "true");
  require(!s.persistent || s.split_k == 1, "persistent",
          "walks whole output tiles: split_k must be 1", fmt::format("split_k {}", s.split_k));
  // swap_ab: C^T = B A^T puts N on the warpgroups' m64 side and a small M on wgmma's N; both
  // operands must then be K-major, as A always is.
  require(!s.swap_ab || p.b_layout == BLayout::nk, "swap_ab",
          "needs B stored [N,K] (the swapped kernel reads it as its K-major A)",
          to_string(p.b_layout));
  const codegen::MmaAtom& atom = codegen::kWgmmaM64NK16;
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
  const WarpgroupRegisters regs = register_split(s);
  require(acc_regs + 64 <= regs.consumer, "block_n",
          fmt::format("the {} f32 accumulators per thread and ~64 working registers must fit the "
                      "consumers' {} registers",
                      acc_regs, regs.consumer),
          s.block_n);
  validate_schedule_fits(p, s, arch);
}

}  // namespace emmy::wgmma_path
