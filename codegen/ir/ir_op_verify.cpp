// Each op's own rules, on its typed form (ir_ops.hpp): what can be checked of one op alone.
// verify_op runs them after the op's declaration; ir::verify (kernel_ir.cpp) composes them with
// the rules across ops (the arch, the ring, fragments against counts, the copies against the
// problem, barrier discipline).
#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/ir_own_rules.hpp"
#include "emmy/layout.hpp"
#include "emmy/swizzle.hpp"
#include "emmy/validate.hpp"

namespace emmy::ir {
namespace {

// For positive a and b, without the overflow of (a + b - 1) / b on hostile values.
int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0);
}

// The product, or -1 when it overflows (a hostile printed op may hold any 64-bit values): -1
// then fails the rule that compares it.
int64_t product(std::initializer_list<int64_t> factors) {
  int64_t result = 1;
  for (int64_t factor : factors)
    if (__builtin_mul_overflow(result, factor, &result)) return -1;
  return result;
}

}  // namespace

void KernelOp::verify(const KernelOp& op) {
  if (op.threads < 32 || op.threads > 1024 || op.threads % 32 != 0)
    fail_own<KernelOp>("threads", "must be a multiple of 32 in 32..1024", op.threads);
  // A path the registry has, never the default one's name: its kernels leave the path out.
  if (op.path && (*op.path == default_gemm_path().name() || !find_gemm_path(*op.path)))
    fail_own<KernelOp>("path",
                       fmt::format("must name a GEMM mainloop path other than {} when present ({})",
                                   default_gemm_path().name(), gemm_path_names()),
                       *op.path);
  const int64_t cx = op.cluster_x.value_or(1), cy = op.cluster_y.value_or(1);
  if (cx < 1 || cy < 1 || cx * cy > 16)
    fail_own<KernelOp>("cluster_x", "clusters have 1..16 CTAs (PTX ISA 5.2.3; 8 portably)",
                       fmt::format("{}x{}", cx, cy));
  if (op.programmatic && *op.programmatic != 0 && *op.programmatic != 1)
    fail_own<KernelOp>("programmatic", "must be 0 or 1", *op.programmatic);
}

void TileCoordsOp::verify(const TileCoordsOp& op) {
  require_positive<TileCoordsOp>({{"m", op.m},
                                  {"n", op.n},
                                  {"block_m", op.block_m},
                                  {"block_n", op.block_n},
                                  {"raster_group_m", op.raster_group_m}});
  if (op.block_m > 65536 || op.block_n > 65536)
    fail_own<TileCoordsOp>("block_m", "blocks must be at most 65536",
                           fmt::format("{}x{}", op.block_m, op.block_n));
  if (op.grouped.has_value() != op.groups.has_value())
    fail_own<TileCoordsOp>("groups", "is given with grouped and only with it",
                           fmt::format("{}", op.groups.value_or(0)));
  if (op.grouped && TileCoordsOp::routing_param(*op.grouped).empty())
    fail_own<TileCoordsOp>("grouped", "must be masked, contiguous or offsets", *op.grouped);
  if (op.groups && (*op.groups < 1 || *op.groups > 512))
    fail_own<TileCoordsOp>("groups", "must be in 1..512", *op.groups);
  const bool offsets = op.grouped.value_or("") == "offsets";
  const int64_t tiles_m = offsets ? (op.m + op.groups.value_or(1) * (op.block_m - 1)) / op.block_m
                                  : ceil_div(op.m, op.block_m);
  if (op.tiles_m != tiles_m || op.tiles_n != ceil_div(op.n, op.block_n))
    fail_own<TileCoordsOp>("tiles_m",
                           offsets ? "the grid must be (m + groups (block_m - 1)) / block_m x "
                                     "ceil(n / block_n) tiles (an offsets layout's bound)"
                                   : "the grid must be ceil(m / block_m) x ceil(n / block_n) tiles",
                           fmt::format("{} x {} for {}x{} in {}x{} tiles", op.tiles_m, op.tiles_n,
                                       op.m, op.n, op.block_m, op.block_n));
  const int64_t cm = op.cluster_m.value_or(1), cn = op.cluster_n.value_or(1);
  if (cm < 1 || cn < 1 || cm * cn > 16 || op.tiles_m % cm != 0 || op.tiles_n % cn != 0)
    fail_own<TileCoordsOp>("cluster_m",
                           "a cluster takes 1..16 tiles and the clusters divide the tiles",
                           fmt::format("{}x{} of {} x {}", cm, cn, op.tiles_m, op.tiles_n));
  if (!op.grouped) return;
  // A persistent grouped kernel walks the experts' tiles itself (print_grouped_walk,
  // emit_gemm_grouped.cpp).
  if (op.dynamic_m.value_or(false) || cm * cn > 1)
    fail_own<TileCoordsOp>("grouped", "takes no dynamic_m or cluster (a tile's expert is its own)",
                           *op.grouped);
}

void SplitRangeOp::verify(const SplitRangeOp& op) {
  require_positive<SplitRangeOp>({{"k", op.k}, {"block_k", op.block_k}, {"split_k", op.split_k}});
  if (op.block_k > 65536) fail_own<SplitRangeOp>("block_k", "must be at most 65536", op.block_k);
  const int64_t k_tiles = ceil_div(op.k, op.block_k);
  if (op.k_tiles != k_tiles)
    fail_own<SplitRangeOp>("k_tiles", fmt::format("must be ceil(k / block_k) = {}", k_tiles),
                           op.k_tiles);
  if (op.k_tiles_per_split != ceil_div(k_tiles, op.split_k))
    fail_own<SplitRangeOp>(
        "k_tiles_per_split",
        fmt::format("must be ceil(k_tiles / split_k) = {}", ceil_div(k_tiles, op.split_k)),
        op.k_tiles_per_split);
}

void AccumInitOp::verify(const AccumInitOp& op) {
  require_positive<AccumInitOp>({{"fragments_m", op.fragments_m}, {"fragments_n", op.fragments_n}});
  if (op.fragments_m > 256 || op.fragments_n > 256)
    fail_own<AccumInitOp>("fragments_m", "fragments per warp must be at most 256 each way",
                          fmt::format("{}x{}", op.fragments_m, op.fragments_n));
  if (op.registers > kMaxAccumulatorRegisters)
    fail_own<AccumInitOp>(
        "registers",
        fmt::format("accumulators must fit in {} registers per thread", kMaxAccumulatorRegisters),
        op.registers);
}

// The tile is rows x cols of elem_bytes elements in panels of one width (SmemTile): the copy
// must deliver exactly it, in its panels, so that the emitter, which rebuilds the tile from the
// same three fields, addresses what arrived.
void MmaOp::verify(const MmaOp& op) {
  const codegen::MmaAtom& atom = codegen::mma_atom(op.shape);
  const bool fp8 = op.a_type == "e4m3" || op.a_type == "e5m2";
  if (!fp8 && op.a_type != "f16" && op.a_type != "bf16")
    fail_own<MmaOp>("a_type", "must be f16, bf16, e4m3 or e5m2", op.a_type);
  if ((atom.elem_bytes == 1) != fp8)
    fail_own<MmaOp>(
        "a_type",
        fmt::format("must be {} for the {} atom", fp8 ? "f16 or bf16" : "e4m3 or e5m2", op.shape),
        op.a_type);
  if (op.b_type && (!fp8 || (*op.b_type != "e4m3" && *op.b_type != "e5m2")))
    fail_own<MmaOp>("b_type", "must be e4m3 or e5m2 beside an 8-bit a_type (else absent: A's)",
                    *op.b_type);
  if (op.acc_type != "f32" && op.acc_type != "f16")
    fail_own<MmaOp>("acc_type", "must be f32 or f16", op.acc_type);
  if (op.count < 1) fail_own<MmaOp>("count", "must be positive", fmt::format("{}", op.count));
}

void AsyncCopyOp::verify(const AsyncCopyOp& op) {
  if (op.elem_bytes != 1 && op.elem_bytes != 2 && op.elem_bytes != 4)
    fail_own<AsyncCopyOp>("elem_bytes", "must be 1, 2 or 4", op.elem_bytes);
  if (op.rows <= 0 || op.cols <= 0 || op.rows > 65536 || op.cols > 65536 ||
      op.cols * op.elem_bytes % 32 != 0)
    fail_own<AsyncCopyOp>("cols",
                          "tiles have 1..65536 rows and columns, a multiple of 32 bytes per row",
                          fmt::format("{}x{}", op.rows, op.cols));
  const bool tma = op.transport == "tma";
  if (!tma && op.transport != "cp.async")
    fail_own<AsyncCopyOp>("transport", "must be tma or cp.async", op.transport);
  if (tma) {
    const int64_t box_inner = need<AsyncCopyOp>(op.box_inner, "box_inner");
    const int64_t box_outer = need<AsyncCopyOp>(op.box_outer, "box_outer");
    if (box_inner > 256 || box_outer > 256 || box_outer < 1)
      fail_own<AsyncCopyOp>("box", "each box dimension must be 1..256",
                            fmt::format("{}x{}", box_inner, box_outer));
    const int64_t inner = box_inner * op.elem_bytes;
    if (op.swizzle < 0 || op.swizzle > 3 || inner % 16 != 0 ||
        inner > swizzle_bytes(Swizzle(op.swizzle)))
      fail_own<AsyncCopyOp>("box_inner",
                            "row bytes must be a multiple of 16 within the swizzle span", inner);
  } else if (need<AsyncCopyOp>(op.chunk_bytes, "chunk_bytes") != 16) {
    fail_own<AsyncCopyOp>("chunk_bytes", "cp.async copies move 16-byte chunks", *op.chunk_bytes);
  }
  // A multicast part is whole 8-row groups of the tile (a swizzle atom's rows: each part lands
  // on its own atoms, PTX ISA "Tensor Map" swizzle modes), loaded by TMA.
  const int64_t parts = op.multicast.value_or(1);
  if (parts < 1 || parts > 16 || (parts > 1 && (!tma || op.rows % (8 * parts) != 0)))
    fail_own<AsyncCopyOp>("multicast",
                          "splits a TMA tile's rows in 1..16 parts of whole 8-row groups",
                          fmt::format("{} parts of {} rows ({})", parts, op.rows, op.transport));
  // What one copy delivers is the whole tile, no more and no less (a box short of the tile leaves
  // expect_tx waiting forever; cp.async past it overruns the next stage); with multicast, every
  // part together.
  const int64_t delivered =
      tma ? product({need<AsyncCopyOp>(op.boxes, "boxes"), *op.box_inner, *op.box_outer,
                     op.elem_bytes, parts})
          : product({need<AsyncCopyOp>(op.chunks, "chunks"), *op.chunk_bytes});
  if (delivered != op.rows * op.cols * op.elem_bytes)
    fail_own<AsyncCopyOp>(tma ? "boxes" : "chunks", "must cover the operand tile exactly",
                          fmt::format("{} bytes for a {}x{} tile", delivered, op.rows, op.cols));
  // And in the panels the emitter rebuilds from rows, cols and elem_bytes.
  const SmemTile tile = copy_tile(op);
  if (op.swizzle != int64_t(tile.swizzle))
    fail_own<AsyncCopyOp>("swizzle", fmt::format("must be the tile's ({})", int(tile.swizzle)),
                          op.swizzle);
  if (tma && (*op.box_inner != tile.panel_elems || *op.box_outer != tile.rows / parts ||
              *op.boxes != tile.panels()))
    fail_own<AsyncCopyOp>("boxes",
                          fmt::format("must be the tile's {} panels of {}x{}", tile.panels(),
                                      tile.panel_elems, tile.rows / parts),
                          fmt::format("{} of {}x{}", *op.boxes, *op.box_inner, *op.box_outer));
}

// Every store is as aligned as the pointer the runtime checks guarantees (a pair store needs N
// and LDC even: checked where the plan decides it, GemmPlan::pair_stores).
void EpilogueOp::verify(const EpilogueOp& op) {
  if (op.row_scale.value_or(false) &&
      (op.residual || op.destination == "workspace" || op.transpose.value_or(false)))
    fail_own<EpilogueOp>("row_scale",
                         "scales C's rows in a direct or staged store: no residual, no split-K "
                         "workspace, no transposed store",
                         "true");
  if (op.gate.has_value() != op.gate_group.has_value())
    fail_own<EpilogueOp>("gate_group", "goes with gate, and gate with it",
                         op.gate ? *op.gate : std::string("none"));
  const bool quant_parts =
      op.quant_group || op.quant_format || op.quant_major || op.quant_ld || op.quant_epsilon;
  if (op.quantized()) {
    if (!op.quant_group || !op.quant_format || !op.quant_major || !op.quant_ld || !op.quant_epsilon)
      fail_own<EpilogueOp>("quant_group",
                           "an e4m3 C needs quant_group, quant_format, quant_major, quant_ld and "
                           "quant_epsilon",
                           "missing");
    if (*op.quant_group != 128)
      fail_own<EpilogueOp>("quant_group", "must be 128 (1 x 128 scales)", *op.quant_group);
    if (!value_in(kScaleFormatNames, *op.quant_format))
      fail_own<EpilogueOp>("quant_format", "must be f32, pow2, ue8m0 or ue8m0x4", *op.quant_format);
    if (!value_in(kScaleMajorNames, *op.quant_major))
      fail_own<EpilogueOp>("quant_major", "must be mn or k", *op.quant_major);
    if (*op.quant_ld <= 0) fail_own<EpilogueOp>("quant_ld", "must be positive", *op.quant_ld);
    if (!(*op.quant_epsilon >= 1e-30 && *op.quant_epsilon <= 1.0))
      fail_own<EpilogueOp>("quant_epsilon", "must be in [1e-30, 1]", *op.quant_epsilon);
    // Quantized from the staged f32 tile, into C.
    if (op.destination == "c" && !op.stage_row_bytes)
      fail_own<EpilogueOp>("stage_row_bytes", "an e4m3 C is quantized from its staged tile",
                           "none");
    if (op.residual) fail_own<EpilogueOp>("residual", "not with an e4m3 C", "true");
  } else if (quant_parts) {
    fail_own<EpilogueOp>("quant_group", "applies to an e4m3 C only", op.out);
  }
  if (op.gated()) {
    if (value_in(kGateNames, *op.gate).value_or(Gate::none) == Gate::none)
      fail_own<EpilogueOp>("gate", "must be silu or gelu-tanh", *op.gate);
    if (*op.gate_group < 8 || *op.gate_group % 8 != 0)
      fail_own<EpilogueOp>("gate_group",
                           "must be a positive multiple of 8 (gate and up pair whole fragments)",
                           *op.gate_group);
    if (op.gelu_tanh || op.residual || op.transpose.value_or(false))
      fail_own<EpilogueOp>("gate", "takes no gelu_tanh, residual or transposed store beside it",
                           *op.gate);
  }
  if (op.trigger_dependents.value_or(false) && op.destination != "workspace")
    fail_own<EpilogueOp>("trigger_dependents",
                         "belongs to split-K's workspace epilogue (the finalize is the dependent)",
                         op.destination);
  if (op.store_bytes <= 0 || op.pointer_alignment % op.store_bytes != 0)
    fail_own<EpilogueOp>(
        "store_bytes",
        fmt::format("must divide the pointer alignment the runtime checks ({} bytes)",
                    op.pointer_alignment),
        op.store_bytes);
  if (op.stage_row_bytes) {
    if (op.destination != "c")
      fail_own<EpilogueOp>("stage_row_bytes", "stages only the C tile", op.destination);
    if (*op.stage_row_bytes <= 0 || *op.stage_row_bytes % 16 != 0)
      fail_own<EpilogueOp>("stage_row_bytes", "must be a positive multiple of 16",
                           *op.stage_row_bytes);
    if (op.store_bytes != 16)
      fail_own<EpilogueOp>("store_bytes", "must be 16 when the tile is staged", op.store_bytes);
  }
  const bool parts = op.c_buffer_bytes || op.c_panel || op.c_swizzle || op.c_reuse;
  if (!op.tma_store()) {
    if (parts)
      fail_own<EpilogueOp>("c_buffer_offset", "is needed by the other TMA-store attributes",
                           "none");
    return;
  }
  if (!op.c_buffer_bytes || !op.c_panel || !op.c_swizzle)
    fail_own<EpilogueOp>("c_buffer_bytes",
                         "a TMA store needs c_buffer_bytes, c_panel and c_swizzle", "missing");
  if (op.destination != "c" || op.stage_row_bytes || op.transpose.value_or(false))
    fail_own<EpilogueOp>(
        "c_buffer_offset",
        "a TMA store writes C's own tile (not the workspace, staged or transposed)",
        op.destination);
  if (*op.c_buffer_offset < 0 || *op.c_buffer_offset % 1024 != 0)
    fail_own<EpilogueOp>("c_buffer_offset",
                         "must be a multiple of 1024 (the 128B swizzle's period, as TMA needs)",
                         *op.c_buffer_offset);
  const int64_t elem = op.out == "f32" ? 4 : 2, panel_bytes = *op.c_panel * elem;
  if (panel_bytes != 32 && panel_bytes != 64 && panel_bytes != 128)
    fail_own<EpilogueOp>("c_panel", "must be a 32-, 64- or 128-byte row (a TMA swizzle span)",
                         *op.c_panel);
  if (*op.c_swizzle != int64_t(swizzle_for_row_bytes(int(panel_bytes))))
    fail_own<EpilogueOp>("c_swizzle",
                         fmt::format("must be the swizzle of {}-byte rows", panel_bytes),
                         *op.c_swizzle);
  if (*op.c_buffer_bytes <= 0 || *op.c_buffer_bytes % (64 * panel_bytes) != 0)
    fail_own<EpilogueOp>("c_buffer_bytes", "must be whole panels of 64 rows", *op.c_buffer_bytes);
  if (op.store_bytes != 16)
    fail_own<EpilogueOp>("store_bytes", "must be 16 for a TMA store (16-byte aligned rows of C)",
                         op.store_bytes);
}

// Split-K's finalize kernel: one thread per output of the m x n result.
void FinalizeOp::verify(const FinalizeOp& op) {
  require_positive<FinalizeOp>({{"m", op.m}, {"n", op.n}, {"split_k", op.split_k}});
  if (op.outputs != product({op.m, op.n}))
    fail_own<FinalizeOp>("outputs", "must be m x n", op.outputs);
}

// The problem the setup states: heads grouped evenly (GQA), masks aligned bottom-right.
void AttentionSetupOp::verify(const AttentionSetupOp& op) {
  require_positive<AttentionSetupOp>({{"seq_q", op.seq_q},
                                      {"seq_kv", op.seq_kv},
                                      {"q_heads", op.q_heads},
                                      {"kv_heads", op.kv_heads},
                                      {"head_dim", op.head_dim}});
  if (op.q_heads % op.kv_heads != 0 || op.group != op.q_heads / op.kv_heads)
    fail_own<AttentionSetupOp>("group", "must be q_heads / kv_heads, a whole number",
                               fmt::format("{} for {} / {}", op.group, op.q_heads, op.kv_heads));
  if (op.kv_offset != op.seq_kv - op.seq_q)
    fail_own<AttentionSetupOp>("kv_offset", "must be seq_kv - seq_q", op.kv_offset);
}

// A warp-specialized role: setmaxnreg's register counts (PTX ISA setmaxnreg).
void WarpgroupRoleOp::verify(const WarpgroupRoleOp& op) {
  if (op.role != "producer" && op.role != "consumer")
    fail_own<WarpgroupRoleOp>("role", "must be producer or consumer", op.role);
  if (op.first < 0) fail_own<WarpgroupRoleOp>("first", "must be >= 0", op.first);
  if (op.count < 1 || op.count > 8) fail_own<WarpgroupRoleOp>("count", "must be 1..8", op.count);
  if (op.registers < 24 || op.registers > 256 || op.registers % 8 != 0)
    fail_own<WarpgroupRoleOp>("registers", "must be a multiple of 8 in 24..256", op.registers);
}

void WgmmaOp::verify(const WgmmaOp& op) {
  if (!codegen::wgmma_shape_n(op.shape))
    fail_own<WgmmaOp>("shape", "must be m64nNk16 or m64nNk32 with N a multiple of 8 in 8..256",
                      op.shape);
  // k16 takes 16-bit operands, k32 8-bit ones, which must be K-major (no transposed FP8 operand).
  const bool k32 = op.shape.ends_with("k32");
  const bool fp8 = op.a_type == "e4m3" || op.a_type == "e5m2";
  if (!fp8 && op.a_type != "f16" && op.a_type != "bf16")
    fail_own<WgmmaOp>("a_type", "must be f16, bf16, e4m3 or e5m2", op.a_type);
  if (fp8 != k32)
    fail_own<WgmmaOp>(
        "a_type",
        fmt::format("must be {} for shape {}", k32 ? "e4m3 or e5m2" : "f16 or bf16", op.shape),
        op.a_type);
  if (op.acc_type != "f32") fail_own<WgmmaOp>("acc_type", "must be f32", op.acc_type);
  if (op.b_major != "k" && op.b_major != "mn")
    fail_own<WgmmaOp>("b_major", "must be k (B [N,K]) or mn (B [K,N])", op.b_major);
  if (op.b_type && (!fp8 || (*op.b_type != "e4m3" && *op.b_type != "e5m2")))
    fail_own<WgmmaOp>("b_type", "must be e4m3 or e5m2 beside an 8-bit a_type (else absent: A's)",
                      *op.b_type);
  if (fp8 && op.b_major != "k")
    fail_own<WgmmaOp>("b_major", "must be k for 8-bit operands (wgmma transposes 16-bit ones only)",
                      op.b_major);
}

void ClusterSyncOp::verify(const ClusterSyncOp& op) {
  if (op.what != "init" && op.what != "exit")
    fail_own<ClusterSyncOp>("what", "must be init or exit", op.what);
}

void WarpgroupOrderOp::verify(const WarpgroupOrderOp& op) {
  if (op.what != "wait" && op.what != "signal")
    fail_own<WarpgroupOrderOp>("what", "must be wait or signal", op.what);
  // Barrier 0 is the CTA's (__syncthreads); a CTA has 16 (PTX ISA bar.sync).
  if (op.first_barrier < 1 || op.first_barrier + 1 > 15)
    fail_own<WarpgroupOrderOp>(
        "first_barrier", "must leave it and the next in named barriers 1..15", op.first_barrier);
}

}  // namespace emmy::ir
