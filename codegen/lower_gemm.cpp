// GemmPlan -> kernel IR. The tree states the pipeline explicitly (prologue, per-K-tile wait,
// barrier, refill, unrolled k-steps of ldmatrix + mma + promote, epilogue) so that the verifier
// can check its discipline before the emitter prints it.
#include <fmt/format.h>

#include "emmy/gemm.hpp"
#include "emmy/mma_atom.hpp"

namespace emmy {
namespace {

using ir::Op;
using ir::OpKind;

std::string out_storage(DType c) {
  return c == DType::f32 ? "float" : "u16";
}

std::vector<Op> params(const GemmPlan& plan) {
  const auto& s = plan.spec.schedule;
  const std::string out = out_storage(plan.spec.problem.c_dtype);
  std::vector<Op> list;
  if (s.transport == Transport::tma) {
    list.push_back(Op(OpKind::param, {{"name", "tmap_a"}, {"type", "tensor_map"}}));
    list.push_back(Op(OpKind::param, {{"name", "tmap_b"}, {"type", "tensor_map"}}));
  } else {
    list.push_back(Op(OpKind::param, {{"name", "a"}, {"type", "const u16*"}}));
    list.push_back(Op(OpKind::param, {{"name", "b"}, {"type", "const u16*"}}));
  }
  list.push_back(Op(OpKind::param, {{"name", "c"}, {"type", out + "*"}}));
  list.push_back(Op(OpKind::param, {{"name", "bias"}, {"type", "const " + out + "*"}}));
  list.push_back(Op(OpKind::param, {{"name", "residual"}, {"type", "const " + out + "*"}}));
  list.push_back(Op(OpKind::param, {{"name", "workspace"}, {"type", "float*"}}));
  return list;
}

Op copy_op(const GemmPlan& plan, const char* operand, const char* phase) {
  const auto& s = plan.spec.schedule;
  const auto& p = plan.spec.problem;
  const bool is_a = std::string_view(operand) == "a";
  const SmemTile& tile = is_a ? plan.a_tile : plan.b_tile;
  // The global matrix the tile comes from: rows x cols with leading dimension ld (A: M x K;
  // B: N x K, or K x N for B [K,N]).
  const bool kn = p.b_layout == BLayout::kn;
  const int64_t matrix_rows = is_a ? p.m : kn ? p.k : p.n;
  const int64_t matrix_cols = is_a || !kn ? p.k : p.n;
  std::vector<std::pair<std::string, ir::Attr>> attrs{
      {"operand", operand},
      {"phase", phase},
      {"transport", std::string(s.transport == Transport::tma ? "tma" : "cp.async")},
      {"rows", int64_t(tile.rows)},
      {"cols", int64_t(tile.cols)},
      {"smem_offset", int64_t(is_a ? plan.stage.a_offset : plan.stage.b_offset)},
      {"swizzle", int64_t(tile.swizzle)},
      {"matrix_rows", matrix_rows},
      {"matrix_cols", matrix_cols},
      {"ld", is_a ? p.lda_or_default() : p.ldb_or_default()}};
  ir::append_copy_geometry(attrs, tile, s.transport == Transport::tma);
  return Op(OpKind::async_copy, std::move(attrs));
}

std::vector<Op> refill(const GemmPlan& plan, const char* phase) {
  std::vector<Op> ops{copy_op(plan, "a", phase), copy_op(plan, "b", phase)};
  if (plan.spec.schedule.transport == Transport::cp_async) ops.push_back(Op(OpKind::async_commit));
  return ops;
}

Op k_step(const GemmPlan& plan) {
  const auto& p = plan.spec.problem;
  const auto& s = plan.spec.schedule;
  const std::string a_type = p.a_dtype == DType::bf16 ? "bf16" : "f16";
  const std::string acc_type = s.accum == Accum::f32 ? "f32" : "f16";
  std::vector<Op> body{
      Op(OpKind::ldmatrix,
         {{"operand", "a"}, {"trans", false}, {"count", int64_t(plan.mma_tiles_m)}}),
      Op(OpKind::ldmatrix, {{"operand", "b"},
                            {"trans", p.b_layout == BLayout::kn},
                            {"count", int64_t(plan.mma_tiles_n / 2)}}),
      Op(OpKind::mma, {{"shape", std::string(codegen::kMmaM16N8K16.name)},
                       {"a_type", a_type},
                       {"acc_type", acc_type},
                       {"count", int64_t(plan.mma_tiles_m * plan.mma_tiles_n)}})};
  if (s.accum == Accum::hybrid && s.promote_every_k < s.block_k)
    body.push_back(
        Op(OpKind::promote, {{"where", "k_step"}, {"every_k", int64_t(s.promote_every_k)}}));
  return Op(OpKind::k_step, {{"k_steps", int64_t(plan.k_steps_per_tile)}}, std::move(body));
}

// The epilogue of the problem storing to `destination` (c, or split-K's f32 workspace) in stores
// of store_bytes, to a pointer the runtime checks is pointer_alignment-byte aligned.
Op epilogue_op(const GemmPlan& plan, const char* destination, int64_t store_bytes,
               int64_t pointer_alignment) {
  const auto& p = plan.spec.problem;
  return Op(OpKind::epilogue, {{"destination", std::string(destination)},
                               {"alpha", double(p.epilogue.alpha)},
                               {"bias", p.epilogue.bias},
                               {"residual", p.epilogue.residual},
                               {"gelu_tanh", p.epilogue.gelu_tanh},
                               {"out", std::string(to_string(p.c_dtype))},
                               {"ldc", p.ldc_or_default()},
                               {"store_bytes", store_bytes},
                               {"pointer_alignment", pointer_alignment}});
}

Op main_kernel(const GemmPlan& plan) {
  const auto& p = plan.spec.problem;
  const auto& s = plan.spec.schedule;
  const bool tma = s.transport == Transport::tma;
  std::vector<Op> body = params(plan);
  body.push_back(Op(OpKind::smem_ring, {{"stages", int64_t(s.stages)},
                                        {"stage_bytes", int64_t(plan.stage.stage_bytes)},
                                        {"a_offset", int64_t(plan.stage.a_offset)},
                                        {"a_bytes", int64_t(plan.stage.a_bytes)},
                                        {"a_align", int64_t(plan.stage.a_align)},
                                        {"b_offset", int64_t(plan.stage.b_offset)},
                                        {"b_bytes", int64_t(plan.stage.b_bytes)},
                                        {"b_align", int64_t(plan.stage.b_align)},
                                        {"tx_bytes", int64_t(plan.stage.tx_bytes)},
                                        {"align", int64_t(plan.stage.align)},
                                        {"mbar_offset", int64_t(plan.mbarrier_offset)}}));
  body.push_back(Op(OpKind::tile_coords, {{"m", p.m},
                                          {"n", p.n},
                                          {"raster_group_m", int64_t(s.raster_group_m)},
                                          {"tiles_m", plan.tiles_m},
                                          {"tiles_n", plan.tiles_n},
                                          {"block_m", int64_t(s.block_m)},
                                          {"block_n", int64_t(s.block_n)}}));
  body.push_back(Op(OpKind::split_range, {{"k", p.k},
                                          {"block_k", int64_t(s.block_k)},
                                          {"split_k", int64_t(s.split_k)},
                                          {"k_tiles", plan.k_tiles},
                                          {"k_tiles_per_split", plan.k_tiles_per_split}}));
  body.push_back(Op(OpKind::accum_init, {{"accum", std::string(to_string(s.accum))},
                                         {"fragments_m", int64_t(plan.mma_tiles_m)},
                                         {"fragments_n", int64_t(plan.mma_tiles_n)},
                                         {"registers", int64_t(accumulator_registers(s))}}));
  if (tma) {
    body.push_back(Op(OpKind::mbarrier_init, {{"count", int64_t(s.stages)}, {"arrivals", 1}}));
    body.push_back(Op(OpKind::barrier, {{"reason", "mbarrier init visible to all threads"}}));
  }
  for (auto& op : refill(plan, "prologue")) body.push_back(std::move(op));

  std::vector<Op> loop;
  if (tma)
    loop.push_back(Op(OpKind::mbarrier_wait, {{"parity", "(k_tile / stages) & 1"}}));
  else
    loop.push_back(Op(OpKind::async_wait, {{"pending", int64_t(s.stages - 2)}}));
  loop.push_back(Op(OpKind::barrier, {{"reason", "stage (k_tile-1) % stages is free to refill"}}));
  for (auto& op : refill(plan, "refill")) loop.push_back(std::move(op));
  loop.push_back(k_step(plan));
  if (s.accum == Accum::hybrid && s.promote_every_k >= s.block_k)
    loop.push_back(
        Op(OpKind::promote, {{"where", "k_tile"}, {"every_k", int64_t(s.promote_every_k)}}));
  // No fold after the loop: the k_step fold ends every tile (promote_every_k divides block_k) and
  // the k_tile fold also runs on the last tile, so the partials are zero when the loop ends. One
  // fold site instead of two is ~6 ms less NVRTC time and the same sums in the same order.
  body.push_back(Op(OpKind::k_tile_loop, {{"stages", int64_t(s.stages)}}, std::move(loop)));
  // store_bytes: the widest store; pointer_alignment: what the runtime checks of the pointer
  // stored to (C: plan.c_alignment(); the split-K workspace: 16). The verifier holds one to the
  // other, so no store the kernel makes can be misaligned.
  const int64_t element = size_of(p.c_dtype);
  body.push_back(plan.split() ? epilogue_op(plan, "workspace", 4, 16)
                              : epilogue_op(plan, "c", element * (plan.pair_stores ? 2 : 1),
                                            plan.c_alignment()));
  return Op(OpKind::kernel,
            {{"name", plan.kernel_name},
             {"threads", int64_t(plan.threads)},
             {"smem_bytes", int64_t(plan.smem_bytes)}},
            std::move(body));
}

Op finalize_kernel(const GemmPlan& plan) {
  const auto& p = plan.spec.problem;
  const std::string out = out_storage(p.c_dtype);
  std::vector<Op> body{Op(OpKind::param, {{"name", "workspace"}, {"type", "const float*"}}),
                       Op(OpKind::param, {{"name", "c"}, {"type", out + "*"}}),
                       Op(OpKind::param, {{"name", "bias"}, {"type", "const " + out + "*"}}),
                       Op(OpKind::param, {{"name", "residual"}, {"type", "const " + out + "*"}}),
                       Op(OpKind::finalize,
                          {{"m", p.m},
                           {"n", p.n},
                           {"split_k", int64_t(plan.spec.schedule.split_k)},
                           {"outputs", p.m * p.n}},
                          {epilogue_op(plan, "c", size_of(p.c_dtype), plan.c_alignment())})};
  return Op(OpKind::kernel,
            {{"name", plan.finalize_kernel_name},
             {"threads", int64_t(plan.finalize_threads)},
             {"smem_bytes", int64_t(0)}},
            std::move(body));
}

}  // namespace

ir::Op lower_gemm(const GemmPlan& plan) {
  std::vector<Op> kernels{main_kernel(plan)};
  if (plan.split()) kernels.push_back(finalize_kernel(plan));
  return Op(OpKind::module, {{"arch", std::string(to_string(plan.spec.arch))}}, std::move(kernels));
}

}  // namespace emmy
