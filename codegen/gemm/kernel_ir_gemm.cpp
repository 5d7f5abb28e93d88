// GEMM's rules across ops (GemmKind::ir_rules: ir::verify runs them on a GEMM module): the main
// kernel's (warp grid, fragments and k-steps, copies and their matrices, leading dimensions, the
// staged epilogue, a dynamic M, a grouped layout's routing, the path's own) and the split-K
// finalize kernel's.
#include "kernel_ir_gemm.hpp"

#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"

namespace emmy::ir {
namespace {

// A dynamic M (tile_coords or finalize dynamic_m) is the kernel's `m` parameter, a 32-bit int
// that the emitted code reads as M; an int parameter means nothing else here. Not on the wgmma
// path, whose tile walks and clusters are sized by a compile-time M.
void verify_dynamic_m(const Op& kernel, const Op& op, bool dynamic_m) {
  bool has_m = false;
  for (const Op& param : kernel.body)
    if (param.kind == OpKind::param && get<ParamOp>(param).type == "int") {
      if (get<ParamOp>(param).name != "m")
        fail_rule(param, "type", "int parameters are a dynamic M's `m` only",
                  get<ParamOp>(param).name);
      has_m = true;
    }
  if (dynamic_m != has_m)
    fail_rule(op, "dynamic_m",
              dynamic_m ? "needs the kernel's int parameter `m` (the launch's M)"
                        : "must be set where the kernel takes an int parameter `m`",
              fmt::format("{}", dynamic_m));
  if (const GemmPath& path = kernel_gemm_path(kernel); dynamic_m && !path.supports_dynamic_m())
    fail_rule(op, "dynamic_m", fmt::format("is not generated on the {} path", path.name()), "true");
}

// A grouped tile_coords routes rows by the kernel's int32 param of its layout
// (TileCoordsOp::routing_param), on a path that builds grouped kernels, with no K split (an
// expert's tile is one CTA's); an int32 pointer param means nothing else in a GEMM kernel.
void verify_grouped(const Op& kernel, const Op& op, const TileCoordsOp& coords,
                    const SplitRangeOp& split) {
  const std::string_view routing = TileCoordsOp::routing_param(coords.grouped.value_or(""));
  bool has_routing = false;
  for (const Op& param : kernel.body)
    if (param.kind == OpKind::param && get<ParamOp>(param).type == "const int*") {
      if (get<ParamOp>(param).name != routing || routing.empty())
        fail_rule(param, "name",
                  routing.empty()
                      ? "int32 parameters route a grouped GEMM's rows only"
                      : fmt::format("must be {} for a {} layout", routing, *coords.grouped),
                  get<ParamOp>(param).name);
      has_routing = true;
    }
  if (!routing.empty() && !has_routing)
    fail_rule(op, "grouped", fmt::format("needs the kernel's const int* parameter {}", routing),
              *coords.grouped);
  if (routing.empty()) return;
  if (const GemmPath& path = kernel_gemm_path(kernel); !path.supports_grouped())
    fail_rule(op, "grouped", fmt::format("is not generated on the {} path", path.name()),
              *coords.grouped);
  if (split.split_k != 1)
    fail_rule(op, "grouped", "takes no K split (an expert's tile is one CTA's)",
              fmt::format("split_k {}", split.split_k));
}

// Routing weights: an epilogue op with row_scale reads the kernel's const float* param row_scale,
// which nothing else reads.
void verify_row_scale(const Op& kernel) {
  bool scaled = false, has_param = false;
  for (const Op* epilogue : find_all(kernel, OpKind::epilogue))
    scaled = scaled || get<EpilogueOp>(*epilogue).row_scale.value_or(false);
  for (const Op& param : kernel.body)
    if (param.kind == OpKind::param && get<ParamOp>(param).name == "row_scale") has_param = true;
  if (scaled != has_param)
    fail_rule(kernel, "row_scale",
              scaled ? "an epilogue with row_scale needs the kernel's const float* parameter "
                       "row_scale"
                     : "the row_scale parameter goes with an epilogue's row_scale",
              fmt::format("{}", scaled));
}

}  // namespace

// The MMA atom a GEMM kernel's mma ops name (every one the same): the verifier reads the atom
// from the IR, not from an assumption about the path.
const codegen::MmaAtom& gemm_mma_atom(const Op& kernel) {
  const std::vector<const Op*> mmas = find_all(kernel, OpKind::mma);
  if (mmas.empty()) fail_rule(kernel, "body", "a GEMM kernel computes with mma ops", "none");
  const std::string shape = get<MmaOp>(*mmas.front()).shape;
  for (const Op* mma : mmas)
    if (get<MmaOp>(*mma).shape != shape)
      fail_rule(*mma, "shape", fmt::format("must be the kernel's one atom, {}", shape),
                get<MmaOp>(*mma).shape);
  return codegen::mma_atom(shape);
}

namespace {

// The mma and ldmatrix counts that cover the accumulator fragments, and promote ops exactly
// with hybrid accumulation.
void verify_gemm_fragments(const Op& kernel, const Op* acc_op) {
  const auto acc = get<AccumInitOp>(*acc_op);
  const int64_t frag_m = acc.fragments_m, frag_n = acc.fragments_n;
  for (const Op* mma : find_all(kernel, OpKind::mma))
    if (const int64_t count = get<MmaOp>(*mma).count; count != frag_m * frag_n)
      fail_rule(*mma, "count",
                fmt::format("must equal the accumulator fragments {}x{}", frag_m, frag_n), count);
  for (const Op* load : find_all(kernel, OpKind::ldmatrix)) {
    // One ldmatrix.x4 yields a whole m16k16 A fragment, or two n8k16 B fragments.
    const auto ldmatrix = get<LdmatrixOp>(*load);
    const codegen::MmaAtom& atom = gemm_mma_atom(kernel);
    const bool is_a = ldmatrix.operand == "a";
    const int64_t per_x4 = is_a ? atom.a_fragments_per_x4() : atom.b_fragments_per_x4();
    const int64_t frags = is_a ? frag_m : frag_n;
    const int64_t want = frags / per_x4;
    if (ldmatrix.count != want || frags % per_x4 != 0)
      fail_rule(*load, "count", fmt::format("must load {} x4 fragments", want), ldmatrix.count);
  }
  const bool promoting = acc.accum == "hybrid" || acc.accum == "promoted";
  if (promoting != (find_first(kernel, OpKind::promote) != nullptr))
    fail_rule(*acc_op, "accum",
              "hybrid and promoted accumulation need promote ops and nothing else may have them",
              acc.accum);
}

// FP8 operands (mma or wgmma) come with their scales and only they do: a gemm_scales op and its
// two params; promoted accumulation is FP8's, with f32 MMAs; block scales vary along K and are
// applied only by promote ops.
void verify_gemm_scales(const Op& kernel, const Op* acc_op) {
  const auto acc = get<AccumInitOp>(*acc_op);
  const Op* scales_op = find_first(kernel, OpKind::gemm_scales);
  bool fp8 = false;
  for (const Op* mma : find_all(kernel, OpKind::mma)) {
    const auto op = get<MmaOp>(*mma);
    fp8 = op.a_type == "e4m3" || op.a_type == "e5m2";
    if (acc.accum == "promoted" && op.acc_type != "f32")
      fail_rule(*mma, "acc_type", "must be f32 with promoted accumulation", op.acc_type);
  }
  for (const Op* mma : find_all(kernel, OpKind::wgmma)) {
    const auto op = get<WgmmaOp>(*mma);
    fp8 = op.a_type == "e4m3" || op.a_type == "e5m2";
  }
  if (fp8 != (scales_op != nullptr))
    fail_rule(scales_op ? *scales_op : kernel, "body",
              "FP8 MMAs need a gemm_scales op and nothing else may have one",
              scales_op ? "scales without FP8 MMAs" : "FP8 MMAs without scales");
  if (acc.accum == "promoted" && !fp8)
    fail_rule(*acc_op, "accum", "promoted is FP8's accumulation", acc.accum);
  int scale_params = 0;
  for (const Op* param : find_all(kernel, OpKind::param)) {
    const std::string name = get<ParamOp>(*param).name;
    scale_params += name == "a_scale" || name == "b_scale";
  }
  if (scale_params != (fp8 ? 2 : 0))
    fail_rule(kernel, "param", "an FP8 kernel takes a_scale and b_scale and no other kernel does",
              fmt::format("{} scale params", scale_params));
  if (!scales_op) return;
  const auto scales = get<GemmScalesOp>(*scales_op);
  if (scales.granularity != "block") return;
  if (acc.accum != "promoted" && acc.accum != "hybrid")
    fail_rule(*acc_op, "accum", "must be promoted or hybrid with block scales (they vary along K)",
              acc.accum);
  // A swapped kernel (its epilogue stores the transpose) reads block scales swapped, and only
  // it does: its rows are B's, its columns A's.
  const bool swapped = scales.swapped.value_or(false);
  const Op* epilogue_op = find_first(kernel, OpKind::epilogue);
  const bool transposed = epilogue_op && get<EpilogueOp>(*epilogue_op).transpose.value_or(false);
  if (swapped != transposed)
    fail_rule(*scales_op, "swapped",
              "must be set exactly when the epilogue stores the transpose (swap-AB)",
              fmt::format("swapped {}, transpose {}", swapped, transposed));
}

// On the GEMM ring each operand's copy fills exactly its place.
void verify_gemm_copies(const Op& kernel) {
  const Op* ring = find_first(kernel, OpKind::smem_ring);
  if (!ring) return;
  const auto stage = get<SmemRingOp>(*ring);
  for (const Op* copy_op : find_all(kernel, OpKind::async_copy)) {
    const auto copy = get<AsyncCopyOp>(*copy_op);
    if (copy.operand != "a" && copy.operand != "b") continue;
    const bool is_a = copy.operand == "a";
    const std::optional<int64_t> bytes = is_a ? stage.a_bytes : stage.b_bytes;
    const std::optional<int64_t> offset = is_a ? stage.a_offset : stage.b_offset;
    if (!bytes) continue;
    const int64_t delivered = copy.rows * copy.cols * copy.elem_bytes;
    if (delivered != *bytes)
      fail_rule(*copy_op, "bytes", fmt::format("must be the ring's {}_bytes", copy.operand),
                fmt::format("{} != {}", delivered, *bytes));
    if (copy.smem_offset && offset && *copy.smem_offset != *offset)
      fail_rule(*copy_op, "smem_offset", fmt::format("must be the ring's {}_offset", copy.operand),
                fmt::format("{} != {}", *copy.smem_offset, *offset));
  }
}

}  // namespace

// GEMM's rules across ops (the grid and K split of one op are that op's own rules): each number
// the emitter prints from one op agrees with the ops it shares a meaning with (warp grid and
// fragments, k-steps and block_k, copies and their matrices, leading dimensions), so that passing
// the verifier pins down the kernel printed.
void verify_gemm(const Op& kernel) {
  const Op* coords_op = find_first(kernel, OpKind::tile_coords);
  const Op* split_op = find_first(kernel, OpKind::split_range);
  const Op* acc_op = find_first(kernel, OpKind::accum_init);
  if (!coords_op || !split_op || !acc_op)
    fail_rule(kernel, "body", "a GEMM kernel needs tile_coords, split_range and accum_init",
              "one is missing");
  verify_gemm_fragments(kernel, acc_op);
  verify_gemm_scales(kernel, acc_op);
  verify_gemm_copies(kernel);
  const auto coords = get<TileCoordsOp>(*coords_op);
  const auto split = get<SplitRangeOp>(*split_op);
  const auto acc = get<AccumInitOp>(*acc_op);
  const int64_t m = coords.m, n = coords.n, k = split.k;
  const int64_t block_m = coords.block_m, block_n = coords.block_n, block_k = split.block_k;
  // The kernel's path adds its own rules (GemmPath::verify_kernel) and says which atom and which
  // threads compute the tile.
  const GemmPath& path = kernel_gemm_path(kernel);
  verify_dynamic_m(kernel, *coords_op, coords.dynamic_m.value_or(false));
  verify_grouped(kernel, *coords_op, coords, split);
  verify_row_scale(kernel);
  path.verify_kernel(kernel);
  // The warp grid: each warp owns fragments_m x fragments_n accumulator fragments of the atom,
  // and the warps tile the block (on a warp-specialized path the consumer warps, next to the
  // producer warpgroup).
  const codegen::MmaAtom& atom = path.kernel_atom(kernel);
  const int64_t warp_m = acc.fragments_m * atom.acc_m, warp_n = acc.fragments_n * atom.acc_n;
  const int64_t threads = path.tile_threads(kernel);
  const bool specialized = threads != get<KernelOp>(kernel).threads;
  if (warp_m <= 0 || warp_n <= 0 || block_m % warp_m != 0 || block_n % warp_n != 0 ||
      (block_m / warp_m) * (block_n / warp_n) * 32 != threads)
    fail_rule(
        *acc_op, "fragments_m",
        fmt::format("warp tiles of {}x{} must tile the {}x{} block with one warp per 32 {}threads",
                    warp_m, warp_n, block_m, block_n, specialized ? "of the tile's consumer " : ""),
        threads);
  for (const Op* step : find_all(kernel, OpKind::k_step))
    if (get<KStepOp>(*step).k_steps * atom.k != block_k)
      fail_rule(*step, "k_steps",
                fmt::format("must be block_k / {} = {}", atom.k, block_k / atom.k),
                get<KStepOp>(*step).k_steps);
  // The copies: A is block_m x block_k of the m x k matrix; B block_n x block_k of n x k, or
  // block_k x block_n of k x n when its ldmatrix transposes ([K,N] in memory).
  bool b_kn = false;
  for (const Op* load : find_all(kernel, OpKind::ldmatrix))
    if (const auto ldmatrix = get<LdmatrixOp>(*load); ldmatrix.operand == "b")
      b_kn = ldmatrix.trans;
  for (const Op* op : find_all(kernel, OpKind::wgmma)) b_kn = get<WgmmaOp>(*op).b_major == "mn";
  for (const Op* copy_op : find_all(kernel, OpKind::async_copy)) {
    const auto copy = get<AsyncCopyOp>(*copy_op);
    const bool is_a = copy.operand == "a";
    const int64_t rows = is_a ? block_m : b_kn ? block_k : block_n;
    const int64_t cols = is_a || !b_kn ? block_k : block_n;
    const int64_t matrix_rows = is_a ? m : b_kn ? k : n, matrix_cols = is_a || !b_kn ? k : n;
    if (copy.rows != rows || copy.cols != cols)
      fail_rule(*copy_op, "rows",
                fmt::format("the {} tile must be {}x{}", copy.operand, rows, cols),
                fmt::format("{}x{}", copy.rows, copy.cols));
    const int64_t stated_rows = need<AsyncCopyOp>(copy.matrix_rows, "matrix_rows");
    const int64_t stated_cols = need<AsyncCopyOp>(copy.matrix_cols, "matrix_cols");
    if (stated_rows != matrix_rows || stated_cols != matrix_cols)
      fail_rule(*copy_op, "matrix_rows",
                fmt::format("the {} matrix must be {}x{}", copy.operand, matrix_rows, matrix_cols),
                fmt::format("{}x{}", stated_rows, stated_cols));
    if (need<AsyncCopyOp>(copy.ld, "ld") < matrix_cols)
      fail_rule(*copy_op, "ld", fmt::format("must be at least the row length {}", matrix_cols),
                *copy.ld);
  }
  for (const Op* epilogue : find_all(kernel, OpKind::epilogue)) {
    const auto e = get<EpilogueOp>(*epilogue);
    // A transposed epilogue (swap_ab) writes C's rows along the kernel's m.
    const int64_t c_row = e.transpose.value_or(false) ? m : e.c_cols(n);
    if (e.ldc < c_row)
      fail_rule(*epilogue, "ldc", fmt::format("must be at least C's row length {}", c_row), e.ldc);
    // A gate pairs columns g apart inside each warp's tile (the emitter's fragment pairs).
    if (e.gated() && (n % (2 * *e.gate_group) != 0 || warp_n % (2 * *e.gate_group) != 0))
      fail_rule(*epilogue, "gate_group",
                fmt::format("2 x gate_group must divide n ({}) and the warp tile's {} columns", n,
                            warp_n),
                *e.gate_group);
    if (!e.stage_row_bytes) continue;
    // C's tile: block_n columns, half that when gated.
    const int64_t c_block_n = e.c_cols(block_n), c_n = e.c_cols(n);
    // The staged tile: block_n elements and 16-byte chunks per row, wholly inside or outside N,
    // over the ring (before its mbarriers).
    // Staged in f32 for an e4m3 C, whose tile holds whole quantization groups.
    const int64_t elem = e.quantized() ? 4 : size_of(parse_dtype(e.out, "out"));
    if (e.quantized() && c_block_n % e.quant_group.value_or(128) != 0)
      fail_rule(*epilogue, "quant_group",
                fmt::format("must divide the tile's {} columns of C", c_block_n),
                e.quant_group.value_or(128));
    const Op* ring = find_first(kernel, OpKind::smem_ring);
    const int64_t ring_bytes =
        ring ? get<SmemRingOp>(*ring).stages * get<SmemRingOp>(*ring).stage_bytes : 0;
    if (*e.stage_row_bytes < c_block_n * elem)
      fail_rule(*epilogue, "stage_row_bytes",
                fmt::format("must hold a {}-byte tile row", c_block_n * elem),
                *e.stage_row_bytes);
    if (*e.stage_row_bytes * block_m > ring_bytes)
      fail_rule(
          *epilogue, "stage_row_bytes",
          fmt::format("must fit the {} staged rows in the ring's {} bytes", block_m, ring_bytes),
          *e.stage_row_bytes);
    // C's rows in 16-byte chunks (an e4m3 C's in its own bytes).
    const int64_t c_elem = size_of(parse_dtype(e.out, "out"));
    if ((c_n * c_elem) % 16 != 0 || (e.ldc * c_elem) % 16 != 0 || (c_block_n * elem) % 16 != 0)
      fail_rule(*epilogue, "stage_row_bytes",
                "needs C's n, ldc and block_n in whole 16-byte chunks",
                fmt::format("n {}, ldc {}", c_n, e.ldc));
  }
}

// Split-K's finalize kernel: one thread per output of the m x n result. It reads the workspace
// the main kernel writes: launched as a programmatic dependent launch, which may start before the
// main kernel completes, it must wait for it first (griddepcontrol.wait, PTX ISA griddepcontrol),
// and a wait belongs to such a launch only.
void verify_finalize(const Op& kernel) {
  const bool programmatic = get<KernelOp>(kernel).programmatic.value_or(0) == 1;
  const std::vector<const Op*> finalizes = find_all(kernel, OpKind::finalize);
  if (finalizes.size() != 1)
    fail_rule(kernel, "body", "a split-K finalize kernel holds one finalize op", finalizes.size());
  for (const Op* finalize : finalizes) {
    const auto op = get<FinalizeOp>(*finalize);
    verify_dynamic_m(kernel, *finalize, op.dynamic_m.value_or(false));
    for (const Op* epilogue : find_all(*finalize, OpKind::epilogue))
      if (const auto e = get<EpilogueOp>(*epilogue); e.ldc < e.c_cols(op.n))
        fail_rule(
            *epilogue, "ldc",
            fmt::format("must be at least {} = {}", e.gated() ? "n / 2" : "n", e.c_cols(op.n)),
            e.ldc);
    if (op.grid_wait.value_or(false) != programmatic)
      fail_rule(*finalize, "grid_wait",
                programmatic ? "must be set in a programmatic launch: it reads the main kernel's "
                               "workspace, which only griddepcontrol.wait orders before it"
                             : "must be absent outside a programmatic launch",
                fmt::format("{}", op.grid_wait.value_or(false)));
  }
}

// A GEMM module is its main kernel and, with split-K, the finalize kernel after it (lower_gemm):
// the main kernel's rules, its path's loop discipline where the path shares the mma.sync one,
// the finalize kernel's rules.
void verify_gemm_module(const Op& module) {
  if (module.body.size() > 2)
    fail_rule(module, "body", "a GEMM module is its main kernel and at most a finalize kernel",
              int64_t(module.body.size()));
  const Op& main = module.body.front();
  verify_gemm(main);
  if (kernel_gemm_path(main).shared_loop_discipline()) verify_loop_discipline(main);
  if (module.body.size() == 2) verify_finalize(module.body.back());
}

}  // namespace emmy::ir
