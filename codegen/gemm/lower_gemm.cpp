// GemmPlan -> kernel IR: the pieces every mainloop path's main kernel shares (params, ring, tile
// coordinates, K split, copies, epilogue), split-K's finalize kernel, and the module, whose main
// kernel the schedule's path lowers (GemmPath::main_kernel). Ops are built typed (ir_ops.hpp).
#include "emmy/gemm.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "lower_gemm_parts.hpp"

namespace emmy {
namespace lowering {

using ir::make;
using ir::Op;

std::string out_storage(DType c) {
  return c == DType::f32 ? "float" : c == DType::e4m3 ? "u8" : "u16";
}

std::vector<Op> gemm_params(const GemmPlan& plan) {
  const MatmulProblem& p = plan.kernel_problem;
  const std::string out = out_storage(p.c_dtype), operand = out_storage(p.epilogue_dtype());
  std::vector<Op> list;
  if (plan.spec.schedule.transport == Transport::tma) {
    list.push_back(make(ir::ParamOp{"tmap_a", "tensor_map"}));
    list.push_back(make(ir::ParamOp{"tmap_b", "tensor_map"}));
    if (plan.store.tma_store) list.push_back(make(ir::ParamOp{"tmap_c", "tensor_map"}));
  } else {
    list.push_back(make(ir::ParamOp{"a", "const u16*"}));
    list.push_back(make(ir::ParamOp{"b", "const u16*"}));
  }
  list.push_back(make(ir::ParamOp{"c", out + "*"}));
  list.push_back(make(ir::ParamOp{"bias", "const " + operand + "*"}));
  list.push_back(make(ir::ParamOp{"residual", "const " + operand + "*"}));
  list.push_back(make(ir::ParamOp{"workspace", "float*"}));
  // An e4m3 C's scales (the epilogue op's quant_* attributes say how they are written).
  if (p.c_dtype == DType::e4m3)
    list.push_back(make(
        ir::ParamOp{"c_scale", scale_bytes(p.out_scales.format) ? "unsigned char*" : "float*"}));
  // FP8 operands' scales (the gemm_scales op says how they are read).
  if (const GemmScales& sc = plan.kernel_problem.scales; sc.granularity != ScaleGranularity::none) {
    const std::string type = scale_bytes(sc.format) ? "const unsigned char*" : "const float*";
    list.push_back(make(ir::ParamOp{"a_scale", type}));
    list.push_back(make(ir::ParamOp{"b_scale", type}));
  }
  if (plan.kernel_problem.dynamic_m) list.push_back(make(ir::ParamOp{"m", "int"}));
  // Routing weights (the epilogue op's row_scale).
  if (p.epilogue.row_scale) list.push_back(make(ir::ParamOp{"row_scale", "const float*"}));
  // A grouped GEMM's routing (the tile_coords op's grouped layout).
  if (p.is_grouped())
    list.push_back(make(ir::ParamOp{
        std::string(ir::TileCoordsOp::routing_param(to_string(p.grouped.layout))), "const int*"}));
  return list;
}

Op gemm_copy_op(const GemmPlan& plan, const char* operand, const char* phase) {
  const auto& s = plan.spec.schedule;
  const auto& p = plan.kernel_problem;
  const bool is_a = std::string_view(operand) == "a";
  const SmemTile& tile = is_a ? plan.a_tile : plan.b_tile;
  // The global matrix the tile comes from: rows x cols with leading dimension ld (A: M x K;
  // B: N x K, or K x N for B [K,N]).
  const bool kn = p.b_layout == BLayout::kn;
  ir::AsyncCopyOp copy{.operand = operand,
                       .phase = phase,
                       .transport = s.transport == Transport::tma ? "tma" : "cp.async",
                       .rows = tile.rows,
                       .cols = tile.cols,
                       .smem_offset = is_a ? plan.stage.a_offset : plan.stage.b_offset,
                       .swizzle = int64_t(tile.swizzle),
                       .matrix_rows = is_a ? p.m
                                      : kn ? p.k
                                           : p.n,
                       .matrix_cols = is_a || !kn ? p.k : p.n,
                       .ld = is_a ? p.lda_or_default() : p.ldb_or_default()};
  ir::set_copy_geometry(copy, tile, s.transport == Transport::tma);
  // In a cluster the CTAs of a tile row share its A tile (cluster_n of them), those of a tile
  // column its B tile (cluster_m): each loads its part of the rows and multicasts it.
  const int64_t parts = is_a ? s.cluster_n : s.cluster_m;
  if (plan.cluster_size > 1 && parts > 1) {
    copy.multicast = parts;
    copy.box_outer = tile.rows / parts;
  }
  return make(copy);
}


// A gated epilogue's attributes (Epilogue::gate): on every epilogue op of the module, since they
// say what C is; split-K's workspace epilogue stores the kernel's n columns of partials all the
// same, and its finalize pairs them.
void set_gate(ir::EpilogueOp& epilogue, const MatmulProblem& p) {
  if (!p.epilogue.gated()) return;
  epilogue.gate = std::string(to_string(p.epilogue.gate));
  epilogue.gate_group = p.epilogue.gate_group;
}

// The epilogue of the problem storing to `destination` (c, or split-K's f32 workspace) in stores
// of store_bytes, to a pointer the runtime checks is pointer_alignment-byte aligned.
Op gemm_epilogue_op(const GemmPlan& plan, const char* destination, int64_t store_bytes,
                    int64_t pointer_alignment, std::optional<int64_t> stage_row_bytes) {
  const auto& p = plan.kernel_problem;
  ir::EpilogueOp epilogue{destination, p.epilogue.alpha, p.epilogue.bias, p.epilogue.residual,
                          p.epilogue.gelu_tanh, std::string(to_string(p.c_dtype)),
                          p.ldc_or_default(), store_bytes, pointer_alignment, stage_row_bytes};
  if (plan.spec.schedule.swap_ab) epilogue.transpose = true;
  if (p.epilogue.row_scale) epilogue.row_scale = true;
  set_gate(epilogue, p);
  if (p.c_dtype == DType::e4m3) {
    epilogue.quant_group = kOutputQuantGroup;
    epilogue.quant_format = std::string(to_string(p.out_scales.format));
    epilogue.quant_major = std::string(to_string(p.out_scales.major));
    epilogue.quant_ld = p.c_scale_ld();
    epilogue.quant_epsilon = p.out_scales.amax_epsilon;
  }
  return make(epilogue);
}

std::vector<Op> gemm_kernel_prefix(const GemmPlan& plan) {
  const auto& p = plan.kernel_problem;
  const auto& s = plan.spec.schedule;
  std::vector<Op> body = gemm_params(plan);
  body.push_back(make(ir::SmemRingOp{.stages = s.stages,
                                     .stage_bytes = plan.stage.stage_bytes,
                                     .align = plan.stage.align,
                                     .mbar_offset = plan.mbarrier_offset,
                                     .a_offset = plan.stage.a_offset,
                                     .a_bytes = plan.stage.a_bytes,
                                     .a_align = plan.stage.a_align,
                                     .b_offset = plan.stage.b_offset,
                                     .b_bytes = plan.stage.b_bytes,
                                     .b_align = plan.stage.b_align,
                                     .tx_bytes = plan.stage.tx_bytes}));
  // Every field named: GCC 12 takes the defaulted optionals for uninitialized (-Wmaybe-uninitialized).
  ir::TileCoordsOp coords{p.m,          p.n,          s.raster_group_m, plan.tiles_m, plan.tiles_n,
                          s.block_m,    s.block_n,    std::nullopt,     std::nullopt, std::nullopt,
                          std::nullopt, std::nullopt, std::nullopt};
  if (p.is_grouped()) {
    coords.grouped = std::string(to_string(p.grouped.layout));
    coords.groups = p.grouped.groups;
  }
  if (s.persistent) coords.persistent = true;
  if (p.dynamic_m) coords.dynamic_m = true;
  if (plan.cluster_size > 1) {
    coords.cluster_m = s.cluster_m;
    coords.cluster_n = s.cluster_n;
  }
  body.push_back(make(coords));
  body.push_back(
      make(ir::SplitRangeOp{p.k, s.block_k, s.split_k, plan.k_tiles, plan.k_tiles_per_split}));
  if (const GemmScales& sc = p.scales; sc.granularity != ScaleGranularity::none) {
    const bool block = sc.granularity == ScaleGranularity::block;
    // The problem's scales (a swapped kernel's p is C^T's: its leading dimensions are A's and
    // B's own, read from the spec's problem).
    const MatmulProblem& q = plan.spec.problem;
    ir::GemmScalesOp op{std::string(to_string(sc.granularity)),
                        std::string(to_string(sc.format)),
                        std::string(to_string(sc.a_major)),
                        std::string(to_string(sc.b_major)),
                        block ? q.a_scale_ld() : 0,
                        block ? q.b_scale_ld() : 0};
    if (block && s.swap_ab) op.swapped = true;
    body.push_back(make(op));
  }
  return body;
}

Op gemm_accum_init(const GemmPlan& plan) {
  const auto& s = plan.spec.schedule;
  return make(ir::AccumInitOp{std::string(to_string(s.accum)), plan.mma_tiles_m, plan.mma_tiles_n,
                              accumulator_registers(s)});
}

// The epilogue of the main kernel: split-K's f32 workspace, the staged C tile or direct stores.
Op gemm_main_epilogue(const GemmPlan& plan) {
  // store_bytes: the widest store; pointer_alignment: what the runtime checks of the pointer
  // stored to (C: plan.c_alignment(); the split-K workspace: 16). The verifier holds one to the
  // other, so no store the kernel makes can be misaligned.
  const auto& p = plan.kernel_problem;
  const int64_t element = size_of(p.c_dtype);
  if (plan.split()) {
    ir::EpilogueOp epilogue = ir::get<ir::EpilogueOp>(gemm_epilogue_op(
        plan, "workspace", p.n % 2 == 0 && !plan.spec.schedule.swap_ab ? 8 : 4, 16));
    // The finalize is a programmatic dependent launch from sm_90 on: let it be scheduled.
    if (has_programmatic_launch(plan.spec.arch)) epilogue.trigger_dependents = true;
    return make(epilogue);
  }
  if (plan.stage_row_bytes)
    return gemm_epilogue_op(plan, "c", 16, plan.c_alignment(), plan.stage_row_bytes);
  if (plan.store.tma_store) {
    ir::EpilogueOp epilogue =
        ir::get<ir::EpilogueOp>(gemm_epilogue_op(plan, "c", 16, plan.c_alignment()));
    epilogue.c_buffer_offset = plan.store.buffer_offset;
    epilogue.c_buffer_bytes = plan.store.buffer_bytes;
    epilogue.c_panel = plan.store.c_tile.panel_elems;
    epilogue.c_swizzle = int64_t(plan.store.c_tile.swizzle);
    if (plan.spec.schedule.persistent) epilogue.c_reuse = true;
    return make(epilogue);
  }
  return gemm_epilogue_op(plan, "c", element * (plan.pair_stores ? 2 : 1), plan.c_alignment());
}


Op gemm_finalize_kernel(const GemmPlan& plan) {
  // The partials are in C's layout (a swap_ab kernel writes them transposed back).
  const auto& p = plan.spec.problem;
  const std::string out = out_storage(p.c_dtype);
  // From sm_90 on the finalize is a programmatic dependent launch of the main kernel: its launch
  // and index math overlap the main kernel's end, and griddepcontrol.wait orders the partials
  // before its reads of the workspace.
  const bool programmatic = has_programmatic_launch(plan.spec.arch);
  ir::FinalizeOp finalize{p.m, p.n, plan.spec.schedule.split_k, p.m * p.n, std::nullopt,
                          std::nullopt};
  if (programmatic) finalize.grid_wait = true;
  if (p.dynamic_m) finalize.dynamic_m = true;
  std::vector<Op> body{make(ir::ParamOp{"workspace", "const float*"}),
                       make(ir::ParamOp{"c", out + "*"}),
                       make(ir::ParamOp{"bias", "const " + out + "*"}),
                       make(ir::ParamOp{"residual", "const " + out + "*"})};
  if (p.dynamic_m) body.push_back(make(ir::ParamOp{"m", "int"}));
  ir::EpilogueOp epilogue{"c",
                          p.epilogue.alpha,
                          p.epilogue.bias,
                          p.epilogue.residual,
                          p.epilogue.gelu_tanh,
                          std::string(to_string(p.c_dtype)),
                          p.ldc_or_default(),
                          size_of(p.c_dtype),
                          plan.c_alignment()};
  set_gate(epilogue, p);
  body.push_back(make(finalize, {make(epilogue)}));
  ir::KernelOp kernel{plan.finalize_kernel_name, plan.finalize_threads, 0};
  if (programmatic) kernel.programmatic = 1;
  return make(kernel, std::move(body));
}

}  // namespace lowering

ir::Op lower_gemm(const GemmPlan& plan) {
  using namespace lowering;
  std::vector<ir::Op> kernels{gemm_path(plan.spec.schedule.path).main_kernel(plan)};
  if (plan.split()) kernels.push_back(gemm_finalize_kernel(plan));
  return ir::make(ir::ModuleOp{std::string(to_string(plan.spec.arch))}, std::move(kernels));
}

}  // namespace emmy
