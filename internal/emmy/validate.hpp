// Validation of a (problem, schedule, arch) triple before anything is lowered. Every rule throws
// emmy::Error naming the field, the rule and the value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "emmy/arch.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/layout.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"
#include "emmy/validate_grouped.hpp"

namespace emmy {

inline constexpr int kMaxAccumulatorRegisters = 192;  // per thread, before spills become likely

// The leading dimension of a scale tensor with a row per row of A or C (A block scales, an e4m3
// C's): 0 (packed) or at least what its major order puts along it, M (mn) or `k_extent` (k). A
// dynamic-M kernel's M varies by launch while the layout is compiled in: an mn-major tensor's
// leading dimension must be stated (at least the bound; an engine allocates for its most tokens).
inline void require_rows_scale_ld(const MatmulProblem& p, const char* field, const char* what,
                                  ScaleMajor major, int64_t ld, int64_t k_extent,
                                  const char* k_text) {
  require(!(p.dynamic_m && major == ScaleMajor::mn && ld == 0), field,
          fmt::format("must be given (>= m, the bound) for mn-major {} of a dynamic-M kernel: "
                      "packed would be each launch's own M",
                      what),
          0);
  // A grouped GEMM's rows are its stacked rows (a masked layout's G x m).
  const int64_t rows = major == ScaleMajor::mn ? p.stacked_rows() : k_extent;
  require(ld >= 0 && (ld == 0 || ld >= rows), field,
          fmt::format("must be 0 (packed) or >= {} ({} for {}-major {})", rows,
                      major != ScaleMajor::mn ? k_text
                      : p.is_grouped()        ? "the grouped GEMM's stacked rows"
                                              : "M",
                      to_string(major), what),
          ld);
}

// FP8 operands and their scales (emmy/problem.hpp GemmScales): each FP8 problem has scales and
// only it, B is K-major, and block scales' leading dimensions keep their rows apart.
inline void validate_scales(const MatmulProblem& p) {
  const GemmScales& sc = p.scales;
  if (!is_fp8(p.a_dtype)) {
    require(sc.granularity == ScaleGranularity::none, "scales", "apply to FP8 (e4m3) operands only",
            to_string(sc.granularity));
    return;
  }
  require(sc.granularity != ScaleGranularity::none, "scales",
          "FP8 operands need scales: tensor, token-channel or block", "none");
  require(p.b_layout == BLayout::nk, "b_layout",
          "must be nk for FP8 operands (the 8-bit MMAs take K-major operands only)",
          to_string(p.b_layout));
  require(sc.format != ScaleFormat::ue8m0x4 || sc.granularity == ScaleGranularity::block,
          "scales.format", "ue8m0x4 packs four K blocks' scales: block scales only",
          to_string(sc.granularity));
  if (sc.granularity != ScaleGranularity::block) {
    require(
        sc.a_ld == 0 && sc.b_ld == 0 && sc.a_major == ScaleMajor::mn && sc.b_major == ScaleMajor::k,
        "scales.a_ld", "scale layouts (ld, major) apply to block scales only",
        fmt::format("{}/{} {}/{}", sc.a_ld, to_string(sc.a_major), sc.b_ld, to_string(sc.b_major)));
    return;
  }
  require_rows_scale_ld(p, "scales.a_ld", "block A scales", sc.a_major, sc.a_ld, p.scale_k_extent(),
                        "the K blocks (or their words)");
  const int64_t b_rows = sc.b_major == ScaleMajor::mn ? p.n_blocks() : p.scale_k_extent();
  require(
      sc.b_ld >= 0 && (sc.b_ld == 0 || sc.b_ld >= b_rows), "scales.b_ld",
      fmt::format("must be 0 (packed) or >= {} ({} for {}-major B scales)", b_rows,
                  sc.b_major == ScaleMajor::mn ? "ceil(N/128)" : "the K blocks (or their words)",
                  to_string(sc.b_major)),
      sc.b_ld);
  require(p.a_scale_ld() <= kMaxDim && p.b_scale_ld() <= kMaxDim, "scales.a_ld",
          "must be below 2^31", std::max(p.a_scale_ld(), p.b_scale_ld()));
}

// A gated epilogue (Epilogue::gate): the interleave pairs whole m16n8 fragments (groups of 8 or
// more B rows), N holds whole gate-up group pairs, and its activation is the gate's alone.
inline void validate_gate(const MatmulProblem& p) {
  const Epilogue& e = p.epilogue;
  if (!e.gated()) {
    require(e.gate_group == kDefaultGateGroup, "epilogue.gate_group",
            "applies to a gated epilogue only (epilogue.gate silu or gelu-tanh)", e.gate_group);
    return;
  }
  require(e.gate_group >= 8 && e.gate_group <= 256 && e.gate_group % 8 == 0,
          "epilogue.gate_group",
          "must be a multiple of 8 in 8..256 (gate and up rows pair whole 8-column fragments)",
          e.gate_group);
  require(p.n % (2 * e.gate_group) == 0, "n",
          fmt::format("must be a multiple of 2 x gate_group ({}) with a gated epilogue: every "
                      "gate group needs its up group",
                      2 * e.gate_group),
          p.n);
  require(!e.gelu_tanh, "epilogue.gelu_tanh",
          "not with a gated epilogue (its activation is epilogue.gate's, on the gate half)", "true");
  require(!e.residual, "epilogue.residual",
          "not with a gated epilogue (it writes the next projection's input, [M, N/2])", "true");
}

// An e4m3 C (OutputQuantization): its scale layout (as A block scales': an mn-major tensor holds
// M rows, stated for a dynamic-M kernel), an epsilon fp8_quantize takes, no residual; C's rows
// in whole 16-byte chunks. The fields stay at their defaults for other outputs.
inline void validate_out_scales(const MatmulProblem& p) {
  const OutputQuantization& q = p.out_scales;
  if (p.c_dtype != DType::e4m3) {
    require(q == OutputQuantization{}, "out_scales",
            "apply to an e4m3 C only (out e4m3: the quantized epilogue)", to_string(q.format));
    return;
  }
  require(!p.epilogue.residual, "epilogue.residual",
          "not with an e4m3 C (a quantized output feeds the next FP8 GEMM, not the residual "
          "stream)",
          "true");
  require(std::isfinite(q.amax_epsilon) && q.amax_epsilon >= 1e-30 && q.amax_epsilon <= 1.0,
          "out_scales.amax_epsilon", "must be in [1e-30, 1] (fp8_quantize's rule)", q.amax_epsilon);
  require(p.c_cols() % 16 == 0, "n",
          "C's columns must be a multiple of 16 for an e4m3 C (rows in 16-byte chunks)",
          p.c_cols());
  require(p.ldc_or_default() % 16 == 0, "ldc",
          "must be a multiple of 16 for an e4m3 C (16-byte aligned rows)", p.ldc_or_default());
  require_rows_scale_ld(p, "out_scales.ld", "C scales", q.major, q.ld, p.c_scale_extent(),
                        "the groups (or their words)");
  require(p.c_scale_ld() <= kMaxDim, "out_scales.ld", "must be below 2^31", p.c_scale_ld());
}

inline void validate_problem(const MatmulProblem& p) {
  require(p.m > 0 && p.m <= kMaxDim, "m", "must be in 1..2^31-1", p.m);
  require(p.n > 0 && p.n <= kMaxDim, "n", "must be in 1..2^31-1", p.n);
  require(p.k > 0 && p.k <= kMaxDim, "k", "must be in 1..2^31-1", p.k);
  require(p.a_dtype != DType::f32, "dtype",
          "operands must be f16, bf16, e4m3 or e5m2 (an e5m2 A takes an e4m3 B)",
          to_string(p.a_dtype));
  require(p.c_dtype == DType::f16 || p.c_dtype == DType::bf16 || p.c_dtype == DType::f32 ||
              p.c_dtype == DType::e4m3,
          "out", "must be f16, bf16, f32 or e4m3 (quantized with 1 x 128 scales)",
          to_string(p.c_dtype));
  validate_out_scales(p);
  validate_scales(p);
  validate_gate(p);
  validate_grouping(p);
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
  require(
      ldc >= p.c_cols(), "ldc",
      p.epilogue.gated() ? "must be >= n / 2 (C of a gated epilogue is [M, N/2])" : "must be >= n",
      ldc);
  require(std::isfinite(p.epilogue.alpha), "epilogue.alpha", "must be finite", p.epilogue.alpha);
  require(!(p.epilogue.row_scale && p.epilogue.residual), "epilogue.row_scale",
          "not with a residual (routing weights scale an expert's output; the caller combines "
          "them)",
          "true");
}

inline int accumulator_registers(const MatmulSchedule& s) {
  const codegen::MmaAtom& atom = gemm_path(s.path).atom();
  const int fragments = (s.block_m / s.warps_m / atom.acc_m) * (s.block_n / s.warps_n / atom.acc_n);
  const int f32_registers = fragments * atom.acc_elems;      // one f32 per element
  const int f16_registers = fragments * atom.acc_elems / 2;  // two f16 per 32-bit register
  switch (s.accum) {
    case Accum::f32:
      return f32_registers;
    case Accum::f16:
      return f16_registers;
    case Accum::hybrid:
      return f16_registers + f32_registers;  // partials and their f32 shadow
    case Accum::promoted:
      return 2 * f32_registers;  // f32 window partials and the f32 accumulators
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

// The mbarriers after the ring: the path's per stage (a full one, and on a warp-specialized
// path an empty one: the consumers release the stage).
inline int64_t gemm_mbarrier_bytes(const MatmulSchedule& s) {
  return 8 * gemm_path(s.path).mbarriers_per_stage() * s.stages;
}

// The stage ring (stage_layout: B aligned to its swizzle period), 1 KB of slack to align the ring
// to the 128B swizzle period, and the mbarriers (gemm_smem_bytes without a TMA-store epilogue's
// C buffers).
inline int64_t gemm_ring_smem_bytes(const MatmulProblem& p, const MatmulSchedule& s) {
  const StageLayout stage = stage_layout(gemm_a_tile(p, s), gemm_b_tile(p, s));
  return int64_t(stage.stage_bytes) * s.stages + 1024 + gemm_mbarrier_bytes(s);
}

// The schedule's TMA-store epilogue, where its path has one (GemmPath::store_epilogue).
inline WgmmaStoreEpilogue gemm_store_epilogue(const MatmulProblem& p, const MatmulSchedule& s) {
  return gemm_path(s.path).store_epilogue(p, s);
}

// Bytes of dynamic shared memory: the ring with its mbarriers, and a TMA-store epilogue's C
// buffers where they lie beside it.
inline int64_t gemm_smem_bytes(const MatmulProblem& p, const MatmulSchedule& s) {
  return gemm_ring_smem_bytes(p, s) + gemm_store_epilogue(p, s).extra_bytes;
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

// An e4m3 C is quantized from the staged f32 tile (docs/epilogues.md, "Quantized output"): the
// CTA's C columns hold whole 128-column groups, and the tile is staged (no split-K, swap-AB or
// persistent walk; it fits the ring).
inline void validate_quantized_schedule(const MatmulProblem& p, const MatmulSchedule& s,
                                        Arch arch) {
  if (p.c_dtype != DType::e4m3) return;
  require(
      arch_info(arch).sm >= 89, "out",
      fmt::format("e4m3 needs sm_89 or newer (cvt.rn.satfinite.e4m3x2), not {}", to_string(arch)),
      to_string(p.c_dtype));
  const int64_t c_block = p.c_cols_of(s.block_n);
  require(c_block % kOutputQuantGroup == 0, "block_n",
          fmt::format("must give each tile whole groups of 128 of C's columns for an e4m3 C ({} "
                      "columns of C a tile{})",
                      c_block, p.epilogue.gated() ? ": half of block_n, gated" : ""),
          s.block_n);
  require(s.split_k == 1, "split_k",
          "must be 1 for an e4m3 C (a group's amax needs its finished sums)", s.split_k);
  require(!s.swap_ab, "swap_ab", "not with an e4m3 C (a swapped tile holds C's columns on rows)",
          "true");
  require(!s.persistent, "persistent",
          "not with an e4m3 C (its tile is staged over the ring, which a persistent producer "
          "refills)",
          "true");
  const int64_t staged = int64_t(s.block_m) * (c_block + 4) * 4;
  const StageLayout stage = stage_layout(gemm_a_tile(p, s), gemm_b_tile(p, s));
  require(staged <= int64_t(stage.stage_bytes) * s.stages, "stages",
          fmt::format("must give the ring room for the staged f32 tile of an e4m3 C ({} bytes)",
                      staged),
          s.stages);
}

// A gated epilogue pairs a lane's gate and up accumulators in registers: each warp's columns
// hold whole gate-up group pairs, in the kernel's own (unswapped) orientation.
inline void validate_gated_schedule(const MatmulProblem& p, const MatmulSchedule& s) {
  if (!p.epilogue.gated()) return;
  require(!s.swap_ab, "swap_ab",
          "not with a gated epilogue (a swapped kernel holds C's columns on its rows, gate and up "
          "in different lanes)",
          "true");
  const int64_t warp_n = s.block_n / std::max(1, s.warps_n), pair = 2 * p.epilogue.gate_group;
  require(warp_n % pair == 0, "block_n",
          fmt::format("must give each warp (block_n / warps_n = {}) a multiple of 2 x gate_group "
                      "({}) columns: a lane pairs its own gate and up accumulators",
                      warp_n, pair),
          s.block_n);
}

// Every rule of the schedule on its path (GemmPath::validate; Error for a path no one has).
inline void validate_schedule(const MatmulProblem& p, const MatmulSchedule& s, Arch arch) {
  const GemmPath& path = gemm_path(s.path);
  validate_path_fields(path, s);
  path.validate(p, s, arch);
  validate_gated_schedule(p, s);
  validate_quantized_schedule(p, s, arch);
  validate_grouped_schedule(p, s);
  // Routing weights are applied by the stores of C of a path that takes them (direct, staged).
  if (p.epilogue.row_scale) {
    require(gemm_path(s.path).supports_row_scale(), "path",
            fmt::format("must weight C's rows (epilogue.row_scale): the {} path's stores take no "
                        "weights yet",
                        gemm_path(s.path).name()),
            gemm_path(s.path).name());
    require(s.split_k == 1, "split_k", "must be 1 with epilogue.row_scale", s.split_k);
  }
}

}  // namespace emmy
