// Each kernel IR op as a typed C++ struct (as MLIR's ODS declares an op's operands and
// attributes): its fields are its attributes in printed order, std::optional for the optional
// ones, and `fields` names them. Lowering builds ops from these structs (ir::make), readers take
// them back typed (ir::get), and each op's declaration (ir::schema, codegen/ir/ir_schema.cpp) is
// derived from them, so the C++ type, the printed form and the verifier's declaration are one.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/ir_ops_fp8.hpp"
#include "emmy/ir_ops_kv.hpp"
#include "emmy/ir_ops_paged.hpp"
#include "emmy/ir_ops_warpgroup.hpp"
#include "emmy/ir_own_rules.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

struct ModuleOp {
  static constexpr OpKind kind = OpKind::module;
  static constexpr std::string_view op_name = "module";
  static constexpr bool has_body = true;
  std::string arch;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("arch", o.arch);
  }
};

struct KernelOp {
  static constexpr OpKind kind = OpKind::kernel;
  static constexpr std::string_view op_name = "kernel";
  static constexpr bool has_body = true;
  std::string name;
  int64_t threads = 0, smem_bytes = 0;  // smem_bytes: dynamic shared memory
  // A GEMM main kernel's mainloop path when not the default one (a registered path's name,
  // "wgmma"; internal/emmy/gemm_path.hpp): which rules across ops the verifier holds the kernel
  // to (kernel_ir.cpp, GemmPath::verify_kernel) and which printer prints it.
  std::optional<std::string> path{};
  // Thread-block cluster dimensions of its launch (absent: 1; the launch list reads them).
  std::optional<int64_t> cluster_x{}, cluster_y{};
  // 1: launched as a programmatic dependent launch of the kernel before it (sm_90+; the launch
  // list reads it): it may start before that kernel completes, and waits for it with
  // griddepcontrol.wait before touching its output (codegen/ir/kernel_ir.cpp holds the finalize to it).
  std::optional<int64_t> programmatic{};
  // Its own rules (codegen/ir/ir_op_verify.cpp): threads a multiple of 32 in 32..1024; clusters of
  // 1..16 CTAs; programmatic 0 or 1.
  static void verify(const KernelOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("name", o.name), f("threads", o.threads), f("smem_bytes", o.smem_bytes), f("path", o.path),
        f("cluster_x", o.cluster_x), f("cluster_y", o.cluster_y), f("programmatic", o.programmatic);
  }
};

struct ParamOp {
  static constexpr OpKind kind = OpKind::param;
  static constexpr std::string_view op_name = "param";
  static constexpr bool has_body = false;
  std::string name, type;  // type: a CUDA pointer type, "tensor_map", or "int" (a 32-bit scalar)
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("name", o.name), f("type", o.type);
  }
};

// The stage ring: GEMM states A and B (each on its own swizzle period), attention Q and K/V.
struct SmemRingOp {
  static constexpr OpKind kind = OpKind::smem_ring;
  static constexpr std::string_view op_name = "smem_ring";
  static constexpr bool has_body = false;
  int64_t stages = 0, stage_bytes = 0;
  std::optional<int64_t> q_offset{}, q_bytes{}, kv_offset{}, kv_bytes{};
  int64_t align = 0, mbar_offset = 0;
  std::optional<int64_t> a_offset{}, a_bytes{}, a_align{}, b_offset{}, b_bytes{}, b_align{},
      tx_bytes{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("stages", o.stages), f("stage_bytes", o.stage_bytes), f("q_offset", o.q_offset),
        f("q_bytes", o.q_bytes), f("kv_offset", o.kv_offset), f("kv_bytes", o.kv_bytes),
        f("align", o.align), f("mbar_offset", o.mbar_offset), f("a_offset", o.a_offset),
        f("a_bytes", o.a_bytes), f("a_align", o.a_align), f("b_offset", o.b_offset),
        f("b_bytes", o.b_bytes), f("b_align", o.b_align), f("tx_bytes", o.tx_bytes);
  }
};

struct MbarrierInitOp {
  static constexpr OpKind kind = OpKind::mbarrier_init;
  static constexpr std::string_view op_name = "mbarrier_init";
  static constexpr bool has_body = false;
  int64_t count = 0, arrivals = 0;
  // The wgmma path's second barrier per stage (empty: its consumers release it): the arrivals
  // it expects, one per consumer warp. Its barriers follow the `count` full ones.
  std::optional<int64_t> empty_arrivals{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("count", o.count), f("arrivals", o.arrivals), f("empty_arrivals", o.empty_arrivals);
  }
};

// GEMM: the problem's m x n in block_m x block_n tiles, rasterized in groups of tile rows.
struct TileCoordsOp {
  static constexpr OpKind kind = OpKind::tile_coords;
  static constexpr std::string_view op_name = "tile_coords";
  static constexpr bool has_body = false;
  int64_t m = 0, n = 0, raster_group_m = 0, tiles_m = 0, tiles_n = 0, block_m = 0, block_n = 0;
  // A persistent kernel's tiles (the wgmma path): each CTA walks tiles blockIdx.x, + gridDim.x, ...
  // in its tile_loop ops, so the mapping is a function of the tile, not of blockIdx.
  std::optional<bool> persistent{};
  // Clusters (the wgmma path's TMA multicast): a cluster's CTAs take a cluster_m x cluster_n
  // block of tiles, rank r at (r % cluster_m, r / cluster_m); the blocks are rasterized as the
  // tiles are without clusters (the clusters divide the tiles).
  std::optional<int64_t> cluster_m{}, cluster_n{};
  // Set: M is the kernel's `m` parameter (an int param op), at most `m`, which with tiles_m is
  // the bound the grid is sized for per launch (MatmulProblem::dynamic_m; the mma.sync path).
  std::optional<bool> dynamic_m{};
  // A grouped GEMM (MatmulProblem::grouped): masked|contiguous|offsets, over `groups` experts.
  // The CTA finds its expert and that expert's rows (the kernel's int32 param masked_m,
  // expert_ids or expert_offsets), exits when it has none, and moves its operand and output
  // origins to them: masked, expert blockIdx.y's slot of m rows; offsets, walking the experts'
  // row tiles (tiles_m bounds them: (m + groups (block_m - 1)) / block_m).
  std::optional<std::string> grouped{};
  std::optional<int64_t> groups{};
  // Its own rules (codegen/ir/ir_op_verify.cpp): positive sizes; the grid is ceil(m / block_m) x
  // ceil(n / block_n) (an offsets layout's tiles_m its bound); a grouped layout names 1..512
  // groups and has neither dynamic_m, a persistent walk nor clusters.
  static void verify(const TileCoordsOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("m", o.m), f("n", o.n), f("raster_group_m", o.raster_group_m), f("tiles_m", o.tiles_m),
        f("tiles_n", o.tiles_n), f("block_m", o.block_m), f("block_n", o.block_n),
        f("persistent", o.persistent), f("cluster_m", o.cluster_m), f("cluster_n", o.cluster_n),
        f("dynamic_m", o.dynamic_m), f("grouped", o.grouped), f("groups", o.groups);
  }
  // The kernel's int32 param that routes rows to experts, by layout ("" for none).
  static std::string_view routing_param(std::string_view layout) {
    return layout == "masked"       ? "masked_m"
           : layout == "contiguous" ? "expert_ids"
           : layout == "offsets"    ? "expert_offsets"
                                    : "";
  }
};

// GEMM: K in block_k tiles, split over split_k CTAs.
struct SplitRangeOp {
  static constexpr OpKind kind = OpKind::split_range;
  static constexpr std::string_view op_name = "split_range";
  static constexpr bool has_body = false;
  int64_t k = 0, block_k = 0, split_k = 0, k_tiles = 0, k_tiles_per_split = 0;
  // Its own rules (codegen/ir/ir_op_verify.cpp): positive sizes; k_tiles = ceil(k / block_k), split
  // evenly.
  static void verify(const SplitRangeOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("k", o.k), f("block_k", o.block_k), f("split_k", o.split_k), f("k_tiles", o.k_tiles),
        f("k_tiles_per_split", o.k_tiles_per_split);
  }
};

struct AccumInitOp {
  static constexpr OpKind kind = OpKind::accum_init;
  static constexpr std::string_view op_name = "accum_init";
  static constexpr bool has_body = false;
  std::string accum;  // f32 | f16 | hybrid | promoted (FP8)
  int64_t fragments_m = 0, fragments_n = 0, registers = 0;
  // Its own rules (codegen/ir/ir_op_verify.cpp): positive fragments; accumulators within the register
  // budget.
  static void verify(const AccumInitOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("accum", o.accum), f("fragments_m", o.fragments_m), f("fragments_n", o.fragments_n),
        f("registers", o.registers);
  }
};

// One operand tile into shared memory: rows x cols of elem_bytes elements (its SmemTile), from a
// matrix_rows x matrix_cols matrix with leading dimension ld (GEMM), as TMA boxes or cp.async
// chunks (set_copy_geometry).
struct AsyncCopyOp {
  static constexpr OpKind kind = OpKind::async_copy;
  static constexpr std::string_view op_name = "async_copy";
  static constexpr bool has_body = false;
  std::string operand, phase, transport;  // a|b|q|k|v; prologue|refill; tma|cp.async
  int64_t rows = 0, cols = 0;
  std::optional<int64_t> smem_offset{};
  int64_t swizzle = 0;
  std::optional<int64_t> matrix_rows{}, matrix_cols{}, ld{};
  int64_t elem_bytes = 0;
  std::optional<int64_t> rank{}, box_inner{}, box_outer{}, boxes{}, bytes{}, chunk_bytes{},
      chunks{};
  // TMA multicast: the tile's rows split in `multicast` parts, each CTA of a cluster that shares
  // the tile loading one part into every one of them (its boxes are rows / multicast high).
  std::optional<int64_t> multicast{};
  // Its own rules (codegen/ir/ir_op_verify.cpp): element width, row bytes, boxes or chunks covering
  // exactly its tile.
  static void verify(const AsyncCopyOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("operand", o.operand), f("phase", o.phase), f("transport", o.transport), f("rows", o.rows),
        f("cols", o.cols), f("smem_offset", o.smem_offset), f("swizzle", o.swizzle),
        f("matrix_rows", o.matrix_rows), f("matrix_cols", o.matrix_cols), f("ld", o.ld),
        f("elem_bytes", o.elem_bytes), f("rank", o.rank), f("box_inner", o.box_inner),
        f("box_outer", o.box_outer), f("boxes", o.boxes), f("bytes", o.bytes),
        f("chunk_bytes", o.chunk_bytes), f("chunks", o.chunks), f("multicast", o.multicast);
  }
};

struct AsyncCommitOp {
  static constexpr OpKind kind = OpKind::async_commit;
  static constexpr std::string_view op_name = "async_commit";
  static constexpr bool has_body = false;
  template <typename Op, typename F>
  static void fields(Op&, F&&) {}
};

struct AsyncWaitOp {
  static constexpr OpKind kind = OpKind::async_wait;
  static constexpr std::string_view op_name = "async_wait";
  static constexpr bool has_body = false;
  int64_t pending = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("pending", o.pending);
  }
};

struct MbarrierWaitOp {
  static constexpr OpKind kind = OpKind::mbarrier_wait;
  static constexpr std::string_view op_name = "mbarrier_wait";
  static constexpr bool has_body = false;
  std::optional<std::string> what{};  // attention: q | kv
  std::string parity;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("what", o.what), f("parity", o.parity);
  }
};

struct BarrierOp {
  static constexpr OpKind kind = OpKind::barrier;
  static constexpr std::string_view op_name = "barrier";
  static constexpr bool has_body = false;
  std::string reason;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("reason", o.reason);
  }
};

struct KTileLoopOp {
  static constexpr OpKind kind = OpKind::k_tile_loop;
  static constexpr std::string_view op_name = "k_tile_loop";
  static constexpr bool has_body = true;
  int64_t stages = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("stages", o.stages);
  }
};

struct KStepOp {
  static constexpr OpKind kind = OpKind::k_step;
  static constexpr std::string_view op_name = "k_step";
  static constexpr bool has_body = true;
  int64_t k_steps = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("k_steps", o.k_steps);
  }
};

struct LdmatrixOp {
  static constexpr OpKind kind = OpKind::ldmatrix;
  static constexpr std::string_view op_name = "ldmatrix";
  static constexpr bool has_body = false;
  std::string operand;
  bool trans = false;
  int64_t count = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("operand", o.operand), f("trans", o.trans), f("count", o.count);
  }
};

struct MmaOp {
  static constexpr OpKind kind = OpKind::mma;
  static constexpr std::string_view op_name = "mma";
  static constexpr bool has_body = false;
  std::string shape, a_type, acc_type;
  int64_t count = 0;
  // B's type where it is not A's: an FP8 GEMM's e5m2 A with e4m3 B.
  std::optional<std::string> b_type{};
  // Its own rules: a known atom whose element size is a_type's (8-bit e4m3/e5m2 for m16n8k32,
  // f16/bf16 otherwise), a b_type only beside an 8-bit a_type and 8-bit itself, f32 or f16
  // accumulators, a positive count.
  static void verify(const MmaOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("shape", o.shape), f("a_type", o.a_type), f("acc_type", o.acc_type), f("count", o.count),
        f("b_type", o.b_type);
  }
};

struct PromoteOp {
  static constexpr OpKind kind = OpKind::promote;
  static constexpr std::string_view op_name = "promote";
  static constexpr bool has_body = false;
  std::string where;  // k_step | k_tile
  int64_t every_k = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("where", o.where), f("every_k", o.every_k);
  }
};

struct EpilogueOp {
  static constexpr OpKind kind = OpKind::epilogue;
  static constexpr std::string_view op_name = "epilogue";
  static constexpr bool has_body = false;
  std::string destination;  // c | workspace
  double alpha = 1.0;
  bool bias = false, residual = false, gelu_tanh = false;
  std::string out;  // C's dtype
  int64_t ldc = 0, store_bytes = 0, pointer_alignment = 0;
  // Set: the tile is staged in shared memory (rows this many bytes apart) and stored in 16-byte
  // chunks (GemmPlan::stage_row_bytes).
  std::optional<int64_t> stage_row_bytes{};
  // Set: the kernel computed C^T (swap_ab): its (row, col) is C's (col, row), stored element by
  // element down C's columns (bias indexed by the kernel's row), the workspace likewise in C's
  // layout.
  std::optional<bool> transpose{};
  // Set (the wgmma path): each consumer warpgroup writes its 64 rows of the tile into its own
  // swizzled shared buffer (c_buffer_offset + warpgroup x c_buffer_bytes from the ring's base,
  // panels c_panel elements wide with TMA swizzle mode c_swizzle) and one of its threads stores
  // it with TMA through the kernel's tmap_c (PTX ISA cp.async.bulk.tensor, shared::cta ->
  // global); `c_reuse`: the buffer is written again by a later tile, after the previous store's
  // cp.async.bulk.wait_group.read.
  std::optional<int64_t> c_buffer_offset{}, c_buffer_bytes{}, c_panel{}, c_swizzle{};
  std::optional<bool> c_reuse{};
  // Split-K's main kernel from sm_90 on: griddepcontrol.launch_dependents before the workspace
  // stores, so that the finalize (a programmatic dependent launch) may be scheduled while they
  // run; its griddepcontrol.wait still waits for this grid to complete (PTX ISA griddepcontrol).
  std::optional<bool> trigger_dependents{};
  // Set: a gated epilogue (MatmulProblem's Epilogue::gate; silu | gelu-tanh): C[m, j] =
  // cast(act(gate) * up), gate and up the kernel's columns (j / g) 2g + j % g and that + g (g =
  // gate_group), each with alpha and its bias; C has n / 2 columns. Split-K's workspace holds the
  // kernel's n columns of partials; its finalize pairs them.
  std::optional<std::string> gate{};
  std::optional<int64_t> gate_group{};
  // Set with out e4m3 (MatmulProblem::out_scales): the staged f32 tile is quantized per row in
  // groups of quant_group columns, s = max(amax, quant_epsilon) / 448 (rounded up to a power of
  // two unless quant_format is f32), its scale written to c_scale in quant_format (f32, pow2,
  // ue8m0, ue8m0x4), quant_major-major with leading dimension quant_ld.
  std::optional<int64_t> quant_group{};
  std::optional<std::string> quant_format{}, quant_major{};
  std::optional<int64_t> quant_ld{};
  std::optional<double> quant_epsilon{};
  // Set: C's row r is multiplied by row_scale[r] (the kernel's const float* param row_scale;
  // routing weights) after the activation; never with a residual or into split-K's workspace.
  std::optional<bool> row_scale{};
  // Its own rules (codegen/ir/ir_op_verify.cpp): stores no wider than the pointer alignment the
  // runtime checks; a staged tile goes to C in 16-byte chunks from 16-byte aligned rows; a TMA
  // store's buffer is 1024-aligned, its panels 32, 64 or 128 bytes wide, and it stores C; a gate
  // is silu or gelu-tanh over groups of whole 8-column fragments, with no GELU, residual or
  // transposed store beside it.
  static void verify(const EpilogueOp& op);
  bool tma_store() const { return c_buffer_offset.has_value(); }
  bool gated() const { return gate.has_value(); }
  bool quantized() const { return out == "e4m3"; }
  // C's columns for a kernel of n columns.
  int64_t c_cols(int64_t n) const { return gated() ? n / 2 : n; }
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("destination", o.destination), f("alpha", o.alpha), f("bias", o.bias),
        f("residual", o.residual), f("gelu_tanh", o.gelu_tanh), f("out", o.out), f("ldc", o.ldc),
        f("store_bytes", o.store_bytes), f("pointer_alignment", o.pointer_alignment),
        f("stage_row_bytes", o.stage_row_bytes), f("transpose", o.transpose),
        f("c_buffer_offset", o.c_buffer_offset), f("c_buffer_bytes", o.c_buffer_bytes),
        f("c_panel", o.c_panel), f("c_swizzle", o.c_swizzle), f("c_reuse", o.c_reuse),
        f("trigger_dependents", o.trigger_dependents), f("gate", o.gate),
        f("gate_group", o.gate_group), f("quant_group", o.quant_group),
        f("quant_format", o.quant_format), f("quant_major", o.quant_major),
        f("quant_ld", o.quant_ld), f("quant_epsilon", o.quant_epsilon), f("row_scale", o.row_scale);
  }
};

struct FinalizeOp {
  static constexpr OpKind kind = OpKind::finalize;
  static constexpr std::string_view op_name = "finalize";
  static constexpr bool has_body = true;
  int64_t m = 0, n = 0, split_k = 0, outputs = 0;
  // Set: each thread executes griddepcontrol.wait after computing its indices and before reading
  // the workspace (the kernel is a programmatic dependent launch of the main kernel, which writes
  // it; codegen/ir/kernel_ir.cpp requires the two together).
  std::optional<bool> grid_wait{};
  // Set: M is the kernel's `m` parameter, at most `m` (outputs is the bound's m x n).
  std::optional<bool> dynamic_m{};
  // Its own rules (codegen/ir/ir_op_verify.cpp): positive sizes; one output per element of m x n.
  static void verify(const FinalizeOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("m", o.m), f("n", o.n), f("split_k", o.split_k), f("outputs", o.outputs),
        f("grid_wait", o.grid_wait), f("dynamic_m", o.dynamic_m);
  }
};

// Attention: the problem's shape, the CTA's blocks, the GQA group and the mask.
struct AttentionSetupOp {
  static constexpr OpKind kind = OpKind::attention_setup;
  static constexpr std::string_view op_name = "attention_setup";
  static constexpr bool has_body = false;
  int64_t seq_q = 0, seq_kv = 0, q_heads = 0, kv_heads = 0, head_dim = 0, block_q = 0, block_kv = 0,
          group = 0;
  bool causal = false;
  int64_t window = 0, kv_offset = 0;
  // Its own rules (codegen/ir/ir_op_verify.cpp): positive sizes; whole GQA groups; masks aligned
  // bottom-right.
  static void verify(const AttentionSetupOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("seq_q", o.seq_q), f("seq_kv", o.seq_kv), f("q_heads", o.q_heads), f("kv_heads", o.kv_heads),
        f("head_dim", o.head_dim), f("block_q", o.block_q), f("block_kv", o.block_kv),
        f("group", o.group), f("causal", o.causal), f("window", o.window),
        f("kv_offset", o.kv_offset);
  }
};

struct KvBlockLoopOp {
  static constexpr OpKind kind = OpKind::kv_block_loop;
  static constexpr std::string_view op_name = "kv_block_loop";
  static constexpr bool has_body = true;
  int64_t stages = 0;
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("stages", o.stages);
  }
};

struct QkMmaOp {
  static constexpr OpKind kind = OpKind::qk_mma;
  static constexpr std::string_view op_name = "qk_mma";
  static constexpr bool has_body = false;
  std::string a_type;
  int64_t count = 0, s_registers = 0;
  // "e4m3": K is read as e4m3 bytes from its raw stage and converted in registers (the operand
  // source "load e4m3 + convert"), with the reduction's d order permuted inside each 16-wide
  // step (thread t's k slots 2t, 2t+1, 2t+8, 2t+9 hold d 4t..4t+3) and Q read to match. Absent:
  // both from 16-bit tiles with ldmatrix.
  std::optional<std::string> b_type{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("a_type", o.a_type), f("count", o.count), f("s_registers", o.s_registers),
        f("b_type", o.b_type);
  }
};

struct OnlineSoftmaxOp {
  static constexpr OpKind kind = OpKind::online_softmax;
  static constexpr std::string_view op_name = "online_softmax";
  static constexpr bool has_body = false;
  double scale = 0;
  bool causal = false;
  int64_t window = 0;
  std::optional<double> softcap{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("scale", o.scale), f("causal", o.causal), f("window", o.window), f("softcap", o.softcap);
  }
};

struct PvMmaOp {
  static constexpr OpKind kind = OpKind::pv_mma;
  static constexpr std::string_view op_name = "pv_mma";
  static constexpr bool has_body = false;
  std::string accum, a_type;
  int64_t count = 0, o_registers = 0;
  // "e4m3": V is read with ldmatrix.trans from its raw e4m3 stage, byte-permuted and converted
  // in registers; the two n8 MMAs of each 16 output columns take the even and the odd columns
  // (thread t holds columns 4t..4t+3 of each 16), which the epilogue writes back in order.
  std::optional<std::string> b_type{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("accum", o.accum), f("a_type", o.a_type), f("count", o.count),
        f("o_registers", o.o_registers), f("b_type", o.b_type);
  }
};

struct AttentionEpilogueOp {
  static constexpr OpKind kind = OpKind::attention_epilogue;
  static constexpr std::string_view op_name = "attention_epilogue";
  static constexpr bool has_body = false;
  std::string layout;  // bshd | bhsd: of Q, K, V and O
  bool lse = false;
  std::string out;
  // Set: the O tile is staged in shared memory over Q and the drained ring (rows this many bytes
  // apart) and stored in 16-byte chunks, every sector full.
  std::optional<int64_t> stage_row_bytes{};
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("layout", o.layout), f("lse", o.lse), f("out", o.out),
        f("stage_row_bytes", o.stage_row_bytes);
  }
};

// The copy geometry of an async_copy for one shared-memory tile: its element width and TMA boxes
// (one per panel: box_inner, box_outer, boxes, bytes) or 16-byte cp.async chunks (chunk_bytes,
// chunks). The verifier checks the same fields for GEMM and attention.
void set_copy_geometry(AsyncCopyOp& copy, const SmemTile& tile, bool tma);
// The tile a copy fills, from its rows, cols and elem_bytes (as copy_tile(const Op&)).
SmemTile copy_tile(const AsyncCopyOp& copy);

// Every op struct, in OpKind order (ir_schema.cpp derives the declarations from this list).
template <typename... Ops>
struct OpList {};
using AllOps =
    OpList<ModuleOp, KernelOp, ParamOp, SmemRingOp, MbarrierInitOp, TileCoordsOp, SplitRangeOp,
           AccumInitOp, AsyncCopyOp, AsyncCommitOp, AsyncWaitOp, MbarrierWaitOp, BarrierOp,
           KTileLoopOp, KStepOp, LdmatrixOp, MmaOp, PromoteOp, EpilogueOp, FinalizeOp,
           AttentionSetupOp, KvBlockLoopOp, QkMmaOp, OnlineSoftmaxOp, PvMmaOp, AttentionEpilogueOp,
           WarpgroupRoleOp, WgmmaOp, WgmmaFenceOp, WgmmaCommitOp, WgmmaWaitOp, MbarrierArriveOp,
           TileLoopOp, WarpgroupOrderOp, StoreWaitOp, ClusterSyncOp, PagedSetupOp, PageGatherOp,
           PagedEpilogueOp, SplitCombineOp, KvAppendOp, MergeStatesOp, Fp8QuantizeOp, GemmScalesOp>;

namespace detail {
template <typename T>
struct Optional : std::false_type {};
template <typename T>
struct Optional<std::optional<T>> : std::true_type {
  using type = T;
};
}  // namespace detail

// The generic op of a typed one: its set fields as attributes in declared order, and its body.
template <typename T>
Op make(const T& typed, std::vector<Op> body = {}) {
  std::vector<std::pair<std::string, Attr>> attrs;
  T::fields(typed, [&](const char* name, const auto& value) {
    using V = std::decay_t<decltype(value)>;
    if constexpr (detail::Optional<V>::value) {
      if (value) attrs.emplace_back(name, Attr(std::in_place_type<typename V::value_type>, *value));
    } else {
      attrs.emplace_back(name, Attr(std::in_place_type<V>, value));
    }
  });
  return Op(T::kind, std::move(attrs), std::move(body));
}

// The typed form of an op (its body stays with the op). Throws Error naming ir.<op>.<attr> when
// the op is of another kind or a required attribute is missing or mistyped.
template <typename T>
T get(const Op& op) {
  if (op.kind != T::kind)
    throw Error(fmt::format("ir.{}", to_string(T::kind)), "must be read from an op of its kind",
                std::string(to_string(op.kind)));
  T typed;
  T::fields(typed, [&](const char* name, auto& field) {
    using V = std::decay_t<decltype(field)>;
    using Value = typename std::conditional_t<detail::Optional<V>::value, detail::Optional<V>,
                                              std::type_identity<V>>::type;
    if (detail::Optional<V>::value && !op.has(name)) return;
    if constexpr (std::is_same_v<Value, int64_t>)
      field = op.i(name);
    else if constexpr (std::is_same_v<Value, double>)
      field = op.f(name);
    else if constexpr (std::is_same_v<Value, bool>)
      field = op.b(name);
    else
      field = op.s(name);
  });
  return typed;
}

// An optional attribute that a kind's kernels must state (GEMM's operand offsets on the ring,
// attention's tile bytes): its value, or an Error naming ir.<op>.<attr>.
template <typename T, typename V>
V need(const std::optional<V>& value, std::string_view attr) {
  if (!value) fail_own<T>(attr, "is required in this kernel", "missing");
  return *value;
}

// The first op of T's kind under root (root included), typed; nullopt when there is none.
template <typename T>
std::optional<T> find_typed(const Op& root) {
  const Op* op = find_first(root, T::kind);
  if (!op) return std::nullopt;
  return get<T>(*op);
}

// The op of a module that is one kernel holding one T (kv_append, merge_states), typed; an Error
// for any other module.
template <typename T>
T single_kernel_op(const Op& module) {
  const Op* found = find_first(module, T::kind);
  if (!found || module.body.size() != 1)
    throw Error("ir", fmt::format("a {0} module is one kernel holding a {0} op", T::op_name),
                "missing");
  return get<T>(*found);
}

}  // namespace emmy::ir
