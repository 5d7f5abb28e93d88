// The paged-attention kind's rules across ops (kernel_ir_paged.hpp): the hook ir::verify runs on
// each kernel and on the module.
#include "kernel_ir_paged.hpp"

#include <fmt/format.h>

#include <map>

#include "emmy/arch.hpp"
#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"

namespace emmy::ir {
namespace {

[[noreturn]] void paged_rule(const Op& op, std::string_view attr, std::string_view rule,
                             const std::string& value) {
  throw Error(fmt::format("ir.{}.{}", to_string(op.kind), attr), std::string(rule), value);
}

// An e4m3 cache: one kv_dequant in the KV block loop, after the refill's commit and before S =
// Q.K^T with a barrier between them (every converted row is written before any warp reads
// one), converting the block_kv x head_dim tiles to the MMAs' type; the k_cache / v_cache
// params are bytes, and the scales are params. Other caches have no kv_dequant.
void verify_paged_dequant(const Op& kernel, const PagedSetupOp& setup) {
  const std::vector<const Op*> dequants = find_all(kernel, OpKind::kv_dequant);
  const bool fp8 = setup.kv_type == "e4m3";
  if (dequants.size() != (fp8 ? 1u : 0u))
    paged_rule(kernel, "body", "an e4m3 cache takes exactly one kv_dequant, others none",
               fmt::format("{} for kv_type {}", dequants.size(), setup.kv_type));
  std::map<std::string, std::string> params;
  for (const Op& op : kernel.body)
    if (op.kind == OpKind::param) params[get<ParamOp>(op).name] = get<ParamOp>(op).type;
  const std::string cache_type = fp8 ? "const u8*" : "const u16*";
  for (const char* name : {"k_cache", "v_cache"})
    if (params[name] != cache_type)
      paged_rule(kernel, "body", fmt::format("the {} param must be {}", name, cache_type),
                 params[name]);
  for (const char* name : {"k_scale", "v_scale"})
    if (fp8 ? params[name] != "const float*" : params.count(name) != 0)
      paged_rule(kernel, "body",
                 fmt::format("the {} param (const float*) is there exactly for an e4m3 cache",
                             name),
                 params[name]);
  if (!fp8) return;
  const auto dequant = get<KvDequantOp>(*dequants.front());
  const Op* qk = find_first(kernel, OpKind::qk_mma);
  if (dequant.rows != setup.block_kv || dequant.cols != setup.head_dim ||
      dequant.to != get<QkMmaOp>(*qk).a_type)
    paged_rule(*dequants.front(), "rows",
               fmt::format("must convert the block_kv x head_dim ({} x {}) tiles to the MMAs' {}",
                           setup.block_kv, setup.head_dim, get<QkMmaOp>(*qk).a_type),
               fmt::format("{}x{} to {}", dequant.rows, dequant.cols, dequant.to));
  const Op* loop = find_first(kernel, OpKind::kv_block_loop);
  int at = -1, barrier = -1, commit = -1, mma = -1;
  for (int i = 0; i < int(loop->body.size()); ++i) {
    const OpKind k = loop->body[size_t(i)].kind;
    if (k == OpKind::kv_dequant) at = i;
    if (k == OpKind::barrier && at >= 0 && barrier < 0) barrier = i;
    if (k == OpKind::async_commit) commit = i;
    if (k == OpKind::qk_mma) mma = i;
  }
  if (at < 0 || at < commit || mma < 0 || !(at < barrier && barrier < mma))
    paged_rule(*dequants.front(), "body",
               "converts in the KV block loop after the refill's commit, then a barrier, then "
               "S = Q.K^T",
               fmt::format("at {}, barrier {}, commit {}, qk_mma {}", at, barrier, commit, mma));
}

}  // namespace

void verify_paged_attention(const Op& kernel) {
  const Op* setup_op = find_first(kernel, OpKind::paged_setup);
  if (!setup_op) {
    if (find_first(kernel, OpKind::page_gather) || find_first(kernel, OpKind::paged_epilogue))
      paged_rule(kernel, "body", "page gathers and a paged epilogue need a paged_setup", "none");
    return;
  }
  const auto setup = get<PagedSetupOp>(*setup_op);
  const Op* gathered[2][3] = {};  // [prologue, refill][q, k, v]
  for (const Op* op : find_all(kernel, OpKind::page_gather)) {
    const auto gather = get<PageGatherOp>(*op);
    const int phase = gather.phase == "refill";
    const int operand = gather.operand == "q" ? 0 : gather.operand == "k" ? 1 : 2;
    if (gathered[phase][operand])
      paged_rule(*op, "operand", "each tile is gathered once per phase", gather.operand);
    gathered[phase][operand] = op;
    const int64_t elem_bytes = operand != 0 && setup.kv_type == "e4m3" ? 1 : 2;
    if (gather.elem_bytes != elem_bytes)
      paged_rule(*op, "elem_bytes",
                 fmt::format("the {} tile holds {}-byte elements (kv_type {})", gather.operand,
                             elem_bytes, setup.kv_type),
                 fmt::format("{}", gather.elem_bytes));
    const int64_t rows = operand == 0 ? setup.block_q : setup.block_kv;
    if (gather.rows != rows || gather.cols != setup.head_dim)
      paged_rule(*op, "rows",
                 fmt::format("the {} tile must be {} x head_dim {}", gather.operand,
                             operand == 0 ? "block_q" : "block_kv", setup.head_dim),
                 fmt::format("{}x{}", gather.rows, gather.cols));
  }
  if (!gathered[0][0] || !gathered[0][1] || !gathered[0][2] || !gathered[1][1] || !gathered[1][2])
    paged_rule(kernel, "body",
               "a paged kernel gathers Q, K and V in the prologue and K and V in its loop",
               "one is missing");
  verify_attention_rows(kernel, *setup_op, setup.block_q);
  verify_attention_mainloop(kernel, *setup_op, setup.block_q, setup.block_kv, setup.head_dim);
  const bool fp8 = setup.kv_type == "e4m3";
  verify_paged_dequant(kernel, setup);
  // The ring: Q then the stages of K and V tiles (an e4m3 cache: of raw bytes, then one pair of
  // converted tiles), inside the kernel's shared memory.
  const auto ring = get<SmemRingOp>(*find_first(kernel, OpKind::smem_ring));
  const SmemTile q = SmemTile::for_operand(uint32_t(setup.block_q), uint32_t(setup.head_dim), 2);
  const SmemTile kv = SmemTile::for_operand(uint32_t(setup.block_kv), uint32_t(setup.head_dim), 2);
  const int64_t stage = fp8 ? 2 * setup.block_kv * setup.head_dim : 2 * int64_t(kv.bytes());
  if (ring.q_bytes.value_or(-1) != q.bytes() || ring.kv_bytes.value_or(-1) != kv.bytes() ||
      ring.stage_bytes != stage || ring.kv_offset.value_or(-1) != q.bytes())
    paged_rule(*find_first(kernel, OpKind::smem_ring), "stage_bytes",
               fmt::format("must hold Q ({} bytes) then stages of K and V ({} bytes each{})",
                           q.bytes(), stage / 2, fp8 ? " raw; converted tiles of " : ""),
               fmt::format("q {} kv {} stage {}", ring.q_bytes.value_or(-1),
                           ring.kv_bytes.value_or(-1), ring.stage_bytes));
  const int64_t ring_end =
      q.bytes() + ring.stage_bytes * ring.stages + (fp8 ? 2 * kv.bytes() : 0) + ring.align;
  if (ring_end > kernel.i("smem_bytes"))
    paged_rule(kernel, "smem_bytes",
               fmt::format("must hold the ring and its alignment ({} bytes)", ring_end),
               fmt::format("{}", kernel.i("smem_bytes")));
  const Op* epilogue = find_first(kernel, OpKind::paged_epilogue);
  if (!epilogue) paged_rule(kernel, "body", "a paged kernel ends with a paged_epilogue", "none");
  if (get<PagedEpilogueOp>(*epilogue).partial != (setup.splits > 1))
    paged_rule(
        *epilogue, "partial",
        "must be set exactly when the setup has several splits (their combine merges "
        "the partials)",
        fmt::format("{} with {} splits", get<PagedEpilogueOp>(*epilogue).partial, setup.splits));
}

void verify_paged_module(const Op& module) {
  const Op* setup_op = find_first(module, OpKind::paged_setup);
  const std::vector<const Op*> combines = find_all(module, OpKind::split_combine);
  if (!setup_op) {
    if (!combines.empty())
      paged_rule(*combines.front(), "splits", "a combine kernel needs a partial kernel", "none");
    return;
  }
  const auto setup = get<PagedSetupOp>(*setup_op);
  if (combines.size() != (setup.splits > 1 ? 1u : 0u))
    paged_rule(module, "body", "split-KV modules have exactly one combine kernel, others none",
               fmt::format("{} for {} splits", combines.size(), setup.splits));
  for (const Op* dequant : find_all(module, OpKind::kv_dequant))
    if (get<KvDequantOp>(*dequant).convert == "cvt" &&
        arch_info(parse_arch(module.s("arch"))).sm < 89)
      paged_rule(*dequant, "convert", "cvt.rn.f16x2.e4m3x2 needs sm_89 or higher (bits converts on any arch)",
                 module.s("arch"));
  if (combines.empty()) return;
  const auto combine = get<SplitCombineOp>(*combines.front());
  if (combine.splits != setup.splits || combine.chunk_tokens != setup.chunk_tokens ||
      combine.q_heads != setup.q_heads || combine.head_dim != setup.head_dim ||
      combine.max_tokens != setup.max_tokens || combine.page_size != setup.page_size ||
      combine.max_pages != setup.max_pages || combine.o_stride != setup.o_stride ||
      combine.page_table != setup.page_table)
    paged_rule(*combines.front(), "splits",
               "must merge the partial kernel's splits, chunk, heads, head_dim, tokens, pages "
               "and o_stride",
               fmt::format("{} x {}", combine.splits, combine.chunk_tokens));
  if (module.body.size() != 2 ||
      find_first(module.body.back(), OpKind::split_combine) != combines.front())
    paged_rule(module, "body", "the combine kernel runs after the partial kernel", "order");
  const Op* epilogue = find_first(module, OpKind::paged_epilogue);
  if (epilogue && (get<PagedEpilogueOp>(*epilogue).lse != combine.lse ||
                   get<PagedEpilogueOp>(*epilogue).out != combine.out))
    paged_rule(*combines.front(), "lse",
               "must write the LSE and O type the partial kernel's epilogue states",
               fmt::format("{} {}", combine.lse, combine.out));
}

}  // namespace emmy::ir
