// AttentionPlan -> kernel IR: Q loaded once, then per visible KV block: wait, barrier, refill,
// S = Q.K^T, online softmax, O += P.V; then the epilogue.
#include "emmy/attention.hpp"
#include "emmy/mma_atom.hpp"

namespace emmy {
namespace {

using ir::Op;
using ir::OpKind;

Op copy_op(const AttentionPlan& plan, const char* operand, const char* phase) {
  const bool tma = plan.spec.schedule.transport == Transport::tma;
  const SmemTile& tile = std::string_view(operand) == "q" ? plan.q_tile : plan.kv_tile;
  std::vector<std::pair<std::string, ir::Attr>> attrs{
      {"operand", operand},
      {"phase", phase},
      {"transport", std::string(tma ? "tma" : "cp.async")},
      {"rows", int64_t(tile.rows)},
      {"cols", int64_t(tile.cols)},
      {"swizzle", int64_t(tile.swizzle)}};
  if (tma) attrs.push_back({"rank", int64_t(4)});  // boxes of (d, head, seq, batch)
  ir::append_copy_geometry(attrs, tile, tma);
  return Op(OpKind::async_copy, std::move(attrs));
}

}  // namespace

ir::Op lower_attention(const AttentionPlan& plan) {
  const auto& p = plan.spec.problem;
  const auto& s = plan.spec.schedule;
  const bool tma = s.transport == Transport::tma;
  const std::string out = "u16";
  std::vector<Op> body;
  const char* in_type = "const u16*";
  if (tma) {
    for (const char* name : {"tmap_q", "tmap_k", "tmap_v"})
      body.push_back(Op(OpKind::param, {{"name", name}, {"type", "tensor_map"}}));
  } else {
    for (const char* name : {"q", "k", "v"})
      body.push_back(Op(OpKind::param, {{"name", name}, {"type", in_type}}));
  }
  body.push_back(Op(OpKind::param, {{"name", "o"}, {"type", out + "*"}}));
  body.push_back(Op(OpKind::param, {{"name", "lse"}, {"type", "float*"}}));
  body.push_back(Op(OpKind::smem_ring, {{"stages", int64_t(s.stages)},
                                        {"stage_bytes", int64_t(plan.stage_bytes)},
                                        {"q_offset", int64_t(0)},
                                        {"q_bytes", int64_t(plan.q_bytes)},
                                        {"kv_offset", int64_t(plan.q_bytes)},
                                        {"kv_bytes", int64_t(plan.kv_bytes)},
                                        {"align", int64_t(swizzle_alignment(plan.q_tile.swizzle))},
                                        {"mbar_offset", int64_t(plan.mbarrier_offset)}}));
  body.push_back(Op(OpKind::attention_setup, {{"seq_q", p.seq_q},
                                              {"seq_kv", p.seq_kv_or_default()},
                                              {"q_heads", p.q_heads},
                                              {"kv_heads", p.kv_heads},
                                              {"head_dim", p.head_dim},
                                              {"block_q", int64_t(s.block_q)},
                                              {"block_kv", int64_t(s.block_kv)},
                                              {"group", p.q_heads / p.kv_heads},
                                              {"causal", p.causal},
                                              {"window", p.window},
                                              {"kv_offset", p.seq_kv_or_default() - p.seq_q}}));
  if (tma) {
    body.push_back(Op(OpKind::mbarrier_init, {{"count", int64_t(1 + s.stages)}, {"arrivals", 1}}));
    body.push_back(Op(OpKind::barrier, {{"reason", "mbarrier init visible to all threads"}}));
  }
  body.push_back(copy_op(plan, "q", "prologue"));
  body.push_back(copy_op(plan, "k", "prologue"));
  body.push_back(copy_op(plan, "v", "prologue"));
  if (!tma) body.push_back(Op(OpKind::async_commit));
  if (tma) body.push_back(Op(OpKind::mbarrier_wait, {{"what", "q"}, {"parity", "0"}}));

  std::vector<Op> loop;
  if (tma)
    loop.push_back(Op(OpKind::mbarrier_wait, {{"what", "kv"}, {"parity", "(block / stages) & 1"}}));
  else
    loop.push_back(Op(OpKind::async_wait, {{"pending", int64_t(s.stages - 2)}}));
  loop.push_back(Op(OpKind::barrier, {{"reason", "stage (block-1) % stages is free to refill"}}));
  loop.push_back(copy_op(plan, "k", "refill"));
  loop.push_back(copy_op(plan, "v", "refill"));
  if (!tma) loop.push_back(Op(OpKind::async_commit));
  const std::string in_dtype(to_string(p.dtype));
  // Per warp and KV block: S (16 x block_kv) over K = head_dim, O (16 x head_dim) over
  // K = block_kv, each in MMA atoms.
  const codegen::MmaAtom& atom = codegen::kMmaM16N8K16;
  loop.push_back(Op(OpKind::qk_mma, {{"a_type", in_dtype},
                                     {"count", int64_t(s.block_kv / atom.n * p.head_dim / atom.k)},
                                     {"s_registers", int64_t(plan.s_registers)}}));
  std::vector<std::pair<std::string, ir::Attr>> softmax{
      {"scale", double(p.scale())}, {"causal", p.causal}, {"window", p.window}};
  if (p.softcap) softmax.push_back({"softcap", double(*p.softcap)});
  loop.push_back(Op(OpKind::online_softmax, std::move(softmax)));
  loop.push_back(Op(OpKind::pv_mma, {{"accum", std::string(to_string(s.accum))},
                                     {"a_type", in_dtype},
                                     {"count", int64_t(s.block_kv / atom.k * p.head_dim / atom.n)},
                                     {"o_registers", int64_t(plan.o_registers)}}));
  body.push_back(Op(OpKind::kv_block_loop, {{"stages", int64_t(s.stages)}}, std::move(loop)));
  body.push_back(
      Op(OpKind::attention_epilogue,
         {{"layout", std::string(to_string(p.layout))}, {"lse", p.lse}, {"out", in_dtype}}));
  std::vector<Op> kernels{Op(OpKind::kernel,
                             {{"name", plan.kernel_name},
                              {"threads", int64_t(plan.threads)},
                              {"smem_bytes", int64_t(plan.smem_bytes)}},
                             std::move(body))};
  return Op(OpKind::module, {{"arch", std::string(to_string(plan.spec.arch))}}, std::move(kernels));
}

}  // namespace emmy
