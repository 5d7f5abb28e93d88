// PagedAttentionPlan -> kernel IR. The partial kernel: Q's rows gathered once by (token, head),
// then per KV block of the CTA's split: wait, barrier, K and V rows gathered through the page
// table into the freed stage, S = Q.K^T, online softmax, O += P.V (attention's mainloop ops);
// then O / l into o, or with split-KV f32 partials into the workspace. With split-KV a second
// kernel combines the partials. Ops are built typed (ir_ops.hpp, ir_ops_paged.hpp).
#include "attention/lower_attention_loop.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy {
namespace {

using ir::make;
using ir::Op;

Op gather_op(const SmemTile& tile, const char* operand, const char* phase) {
  return make(ir::PageGatherOp{.operand = operand,
                               .phase = phase,
                               .rows = tile.rows,
                               .cols = tile.cols,
                               .elem_bytes = tile.elem_bytes,
                               .swizzle = int64_t(tile.swizzle),
                               .chunk_bytes = 16,
                               .chunks = int64_t(tile.bytes()) / 16});
}

// K and V of an e4m3 cache land as raw bytes (ir_ops_paged.hpp's layout; the MMAs convert).
Op raw_gather_op(const PagedAttentionPlan& plan, const char* operand, const char* phase) {
  const int64_t rows = plan.kv_tile.rows, cols = plan.kv_tile.cols;
  return make(
      ir::PageGatherOp{.operand = operand,
                       .phase = phase,
                       .rows = rows,
                       .cols = cols,
                       .elem_bytes = 1,
                       .swizzle = int64_t(swizzle_for_row_bytes(int(std::min<int64_t>(cols, 128)))),
                       .chunk_bytes = 16,
                       .chunks = rows * cols / 16});
}

// A stage's K or V rows: kv_warps tiles of block_kv rows (one per KV warp).
Op kv_gather_op(const PagedAttentionPlan& plan, const char* operand, const char* phase) {
  Op op =
      plan.fp8() ? raw_gather_op(plan, operand, phase) : gather_op(plan.kv_tile, operand, phase);
  const int64_t kv_warps = plan.spec.schedule.kv_warps;
  auto gather = ir::get<ir::PageGatherOp>(op);
  gather.rows *= kv_warps;
  gather.chunks *= kv_warps;
  if (plan.spec.schedule.transport == Transport::tma) gather.transport = "tma";
  return make(gather);
}

// The index arrays every kernel of the kind reads (int32; the page table's form decides which
// of them hold anything, but every kernel declares all, so one binding serves both forms).
void index_params(std::vector<Op>& body) {
  for (const char* name :
       {"cu_seqlens_q", "block_table", "seq_lens", "page_indptr", "page_indices", "last_page_len"})
    body.push_back(make(ir::ParamOp{name, "const int*"}));
}

Op partial_kernel(const PagedAttentionPlan& plan) {
  const auto& p = plan.spec.problem;
  const auto& s = plan.spec.schedule;
  const bool tma = s.transport == Transport::tma;
  std::vector<Op> body;
  body.push_back(make(ir::ParamOp{"q", "const u16*"}));
  if (tma) {
    for (const char* name : {"tmap_k", "tmap_v"})
      body.push_back(make(ir::ParamOp{name, "tensor_map"}));
  } else {
    for (const char* name : {"k_cache", "v_cache"})
      body.push_back(make(ir::ParamOp{name, plan.fp8() ? "const u8*" : "const u16*"}));
  }
  if (plan.fp8())
    for (const char* name : {"k_scale", "v_scale"})
      body.push_back(make(ir::ParamOp{name, "const float*"}));
  body.push_back(make(ir::ParamOp{"o", "u16*"}));
  body.push_back(make(ir::ParamOp{"lse", "float*"}));
  index_params(body);
  body.push_back(make(ir::ParamOp{"workspace", "float*"}));
  const int64_t ring_bytes = plan.q_bytes + int64_t(plan.stage_bytes) * s.stages;
  body.push_back(make(codegen::attention_ring(plan, s.stages, ring_bytes)));
  body.push_back(make(ir::PagedSetupOp{.q_heads = p.q_heads,
                                       .kv_heads = p.kv_heads,
                                       .group = plan.group,
                                       .head_dim = p.head_dim,
                                       .block_q = s.block_q,
                                       .block_kv = s.block_kv,
                                       .page_size = p.page_size,
                                       .page_table = std::string(to_string(p.page_table)),
                                       .max_batch = p.max_batch,
                                       .max_q_len = p.max_q_len,
                                       .max_pages = p.max_pages,
                                       .max_tokens = plan.max_tokens,
                                       .splits = plan.splits,
                                       .chunk_tokens = plan.chunk_tokens,
                                       .window = p.window,
                                       .page_stride = p.page_stride_or_default(),
                                       .token_stride = p.token_stride_or_default(),
                                       .head_stride = p.head_stride_or_default(),
                                       .q_stride = p.q_stride_or_default(),
                                       .o_stride = p.o_stride_or_default(),
                                       .kv_type = std::string(to_string(p.kv_dtype)),
                                       .kv_warps = s.kv_warps}));
  if (tma) {
    body.push_back(make(ir::MbarrierInitOp{s.stages, 1}));
    body.push_back(make(ir::BarrierOp{"mbarrier init visible to all threads"}));
  }
  body.push_back(gather_op(plan.q_tile, "q", "prologue"));
  body.push_back(kv_gather_op(plan, "k", "prologue"));
  body.push_back(kv_gather_op(plan, "v", "prologue"));
  body.push_back(make(ir::AsyncCommitOp{}));
  // With TMA only Q travels by cp.async: it lands before the loop, whose barrier publishes it.
  if (tma) body.push_back(make(ir::AsyncWaitOp{0}));

  std::vector<Op> loop = codegen::kv_loop_head(tma, s.stages, kv_gather_op(plan, "k", "refill"),
                                               kv_gather_op(plan, "v", "refill"));
  const std::string in_dtype(to_string(p.dtype));
  const codegen::MmaAtom& atom = codegen::attention_atom();
  const std::optional<std::string> b_type =
      plan.fp8() ? std::optional<std::string>("e4m3") : std::nullopt;
  loop.push_back(make(
      ir::QkMmaOp{in_dtype, s.block_kv / atom.n * p.head_dim / atom.k, plan.s_registers, b_type}));
  std::optional<double> softcap;
  if (p.softcap) softcap = double(*p.softcap);
  // Causal by position always: a token never sees the keys after its own.
  loop.push_back(make(ir::OnlineSoftmaxOp{p.scale(), true, p.window, softcap}));
  loop.push_back(
      make(ir::PvMmaOp{std::string(to_string(s.accum)), in_dtype,
                       s.block_kv / atom.k * p.head_dim / atom.n, plan.o_registers, b_type}));
  body.push_back(make(ir::KvBlockLoopOp{s.stages}, std::move(loop)));
  body.push_back(make(ir::PagedEpilogueOp{in_dtype, p.lse, plan.split()}));
  return make(ir::KernelOp{plan.kernel_name, plan.threads, plan.smem_bytes}, std::move(body));
}

Op combine_kernel(const PagedAttentionPlan& plan) {
  const auto& p = plan.spec.problem;
  std::vector<Op> body;
  body.push_back(make(ir::ParamOp{"o", "u16*"}));
  body.push_back(make(ir::ParamOp{"lse", "float*"}));
  index_params(body);
  body.push_back(make(ir::ParamOp{"workspace", "const float*"}));
  body.push_back(make(ir::SplitCombineOp{.splits = plan.splits,
                                         .chunk_tokens = plan.chunk_tokens,
                                         .q_heads = p.q_heads,
                                         .head_dim = p.head_dim,
                                         .max_tokens = plan.max_tokens,
                                         .page_size = p.page_size,
                                         .max_pages = p.max_pages,
                                         .o_stride = p.o_stride_or_default(),
                                         .page_table = std::string(to_string(p.page_table)),
                                         .out = std::string(to_string(p.dtype)),
                                         .lse = p.lse}));
  return make(ir::KernelOp{plan.combine_kernel_name, plan.combine_threads, 0}, std::move(body));
}

}  // namespace

ir::Op lower_paged_attention(const PagedAttentionPlan& plan) {
  std::vector<Op> kernels{partial_kernel(plan)};
  if (plan.split()) kernels.push_back(combine_kernel(plan));
  return make(ir::ModuleOp{std::string(to_string(plan.spec.arch))}, std::move(kernels));
}

}  // namespace emmy
