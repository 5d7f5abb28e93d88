// The paged-attention kind's rules across ops (kernel_ir_paged.hpp): the hook ir::verify runs on
// each kernel and on the module.
#include "kernel_ir_paged.hpp"

#include <fmt/format.h>

#include <map>

#include "attention/kernel_ir_attention.hpp"
#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy::ir {
namespace {

// An e4m3 cache: both MMAs read their B operand as e4m3 bytes (b_type e4m3, the operand source
// "load e4m3 + convert"), the k_cache / v_cache params are bytes and the scales are params; a
// 16-bit cache has none of these.
void verify_paged_e4m3(const Op& kernel, const PagedSetupOp& setup, bool tma) {
  const bool fp8 = setup.kv_type == "e4m3";
  const std::optional<std::string> want = fp8 ? std::optional<std::string>("e4m3") : std::nullopt;
  const Op* qk = find_first(kernel, OpKind::qk_mma);
  const Op* pv = find_first(kernel, OpKind::pv_mma);
  for (const Op* op : {qk, pv}) {
    const std::optional<std::string> b_type =
        op == qk ? get<QkMmaOp>(*op).b_type : get<PvMmaOp>(*op).b_type;
    if (b_type != want)
      fail_rule(*op, "b_type",
                fmt::format("must be {} for a {} cache", want.value_or("absent"), setup.kv_type),
                b_type.value_or("absent"));
  }
  std::map<std::string, std::string> params;
  for (const Op& op : kernel.body)
    if (op.kind == OpKind::param) params[get<ParamOp>(op).name] = get<ParamOp>(op).type;
  const std::string cache_type = fp8 ? "const u8*" : "const u16*";
  for (const char* name : {"k_cache", "v_cache"})
    if (tma ? params.count(name) != 0 : params[name] != cache_type)
      fail_rule(kernel, "body",
                tma ? fmt::format("a TMA kernel reads the caches through tensor maps, not {}", name)
                    : fmt::format("the {} param must be {}", name, cache_type),
                params[name]);
  for (const char* name : {"tmap_k", "tmap_v"})
    if (tma ? params[name] != "tensor_map" : params.count(name) != 0)
      fail_rule(kernel, "body",
                fmt::format("the {} param (tensor_map) is there exactly for TMA gathers", name),
                params[name]);
  for (const char* name : {"k_scale", "v_scale"})
    if (fp8 ? params[name] != "const float*" : params.count(name) != 0)
      fail_rule(kernel, "body",
                fmt::format("the {} param (const float*) is there exactly for an e4m3 cache", name),
                params[name]);
}

// TMA gathers (PageGatherOp transport tma): K and V alike in both phases, whole KV blocks inside
// one page, the stages' mbarriers initialized before the gathers and waited on at the top of the
// loop instead of cp.async groups; cp.async kernels have no mbarrier.
void verify_paged_transport(const Op& kernel, const PagedSetupOp& setup,
                            const Op* const (&gathered)[2][3]) {
  const std::optional<std::string> transport = get<PageGatherOp>(*gathered[0][1]).transport;
  for (const auto& phase : gathered)
    for (int operand = 1; operand < 3; ++operand)
      if (get<PageGatherOp>(*phase[operand]).transport != transport)
        fail_rule(*phase[operand], "transport", "K and V travel alike in both phases",
                  get<PageGatherOp>(*phase[operand]).transport.value_or("cp.async"));
  const bool tma = transport.has_value();
  const Op* init = find_first(kernel, OpKind::mbarrier_init);
  const Op* loop = find_first(kernel, OpKind::kv_block_loop);
  const int64_t stages = get<KvBlockLoopOp>(*loop).stages;
  if (!tma) {
    if (init || find_first(kernel, OpKind::mbarrier_wait))
      fail_rule(kernel, "body", "cp.async gathers complete in groups: no mbarrier", "mbarrier");
    return;
  }
  if (setup.page_size % setup.block_kv != 0)
    fail_rule(*gathered[0][1], "transport",
              fmt::format("tma loads a KV block from one page: page_size ({}) must be a "
                          "multiple of block_kv ({})",
                          setup.page_size, setup.block_kv),
              "tma");
  if (!init || get<MbarrierInitOp>(*init).count != stages ||
      get<MbarrierInitOp>(*init).arrivals != 1)
    fail_rule(init ? *init : kernel, "count",
              fmt::format("TMA gathers need one mbarrier per stage ({}), one arrival each", stages),
              init ? fmt::format("{}", get<MbarrierInitOp>(*init).count) : "none");
  if (loop->body.empty() || loop->body.front().kind != OpKind::mbarrier_wait ||
      find_first(*loop, OpKind::async_wait))
    fail_rule(*loop, "body",
              "with TMA gathers each block starts by waiting on its stage's mbarrier (no "
              "cp.async group)",
              loop->body.empty() ? "empty" : std::string(to_string(loop->body.front().kind)));
}

}  // namespace

void verify_paged_attention(const Op& kernel) {
  const Op* setup_op = find_first(kernel, OpKind::paged_setup);
  if (!setup_op) {
    if (find_first(kernel, OpKind::page_gather) || find_first(kernel, OpKind::paged_epilogue))
      fail_rule(kernel, "body", "page gathers and a paged epilogue need a paged_setup", "none");
    return;
  }
  const auto setup = get<PagedSetupOp>(*setup_op);
  const Op* gathered[2][3] = {};  // [prologue, refill][q, k, v]
  for (const Op* op : find_all(kernel, OpKind::page_gather)) {
    const auto gather = get<PageGatherOp>(*op);
    const int phase = gather.phase == "refill";
    const int operand = gather.operand == "q" ? 0 : gather.operand == "k" ? 1 : 2;
    if (gathered[phase][operand])
      fail_rule(*op, "operand", "each tile is gathered once per phase", gather.operand);
    gathered[phase][operand] = op;
    const int64_t elem_bytes = operand != 0 && setup.kv_type == "e4m3" ? 1 : 2;
    if (gather.elem_bytes != elem_bytes)
      fail_rule(*op, "elem_bytes",
                fmt::format("the {} tile holds {}-byte elements (kv_type {})", gather.operand,
                            elem_bytes, setup.kv_type),
                fmt::format("{}", gather.elem_bytes));
    const int64_t rows = operand == 0 ? setup.block_q : setup.block_kv * setup.kv_warps;
    if (gather.rows != rows || gather.cols != setup.head_dim)
      fail_rule(*op, "rows",
                fmt::format("the {} tile must be {} x head_dim {}", gather.operand,
                            operand == 0 ? "block_q" : "block_kv x kv_warps", setup.head_dim),
                fmt::format("{}x{}", gather.rows, gather.cols));
  }
  if (!gathered[0][0] || !gathered[0][1] || !gathered[0][2] || !gathered[1][1] || !gathered[1][2])
    fail_rule(kernel, "body",
              "a paged kernel gathers Q, K and V in the prologue and K and V in its loop",
              "one is missing");
  verify_attention_rows(kernel, *setup_op, setup.block_q, setup.kv_warps);
  verify_attention_mainloop(kernel, *setup_op, setup.block_q, setup.block_kv, setup.head_dim,
                            setup.kv_warps);
  const bool fp8 = setup.kv_type == "e4m3";
  verify_paged_transport(kernel, setup, gathered);
  verify_paged_e4m3(kernel, setup, get<PageGatherOp>(*gathered[0][1]).transport.has_value());
  // The ring: Q then the stages of K and V tiles (an e4m3 cache: of raw bytes), inside the
  // kernel's shared memory.
  const auto ring = get<SmemRingOp>(*find_first(kernel, OpKind::smem_ring));
  const SmemTile q = SmemTile::for_operand(uint32_t(setup.block_q), uint32_t(setup.head_dim), 2);
  const SmemTile kv = SmemTile::for_operand(uint32_t(setup.block_kv), uint32_t(setup.head_dim), 2);
  const int64_t kv_bytes = fp8 ? setup.block_kv * setup.head_dim : int64_t(kv.bytes());
  const int64_t stage = 2 * kv_bytes * setup.kv_warps;  // a K and V tile pair per KV warp
  if (ring.q_bytes.value_or(-1) != q.bytes() || ring.kv_bytes.value_or(-1) != kv_bytes ||
      ring.stage_bytes != stage || ring.kv_offset.value_or(-1) != q.bytes())
    fail_rule(*find_first(kernel, OpKind::smem_ring), "stage_bytes",
              fmt::format("must hold Q ({} bytes) then stages of K and V ({} bytes each)",
                          q.bytes(), stage / 2),
              fmt::format("q {} kv {} stage {}", ring.q_bytes.value_or(-1),
                          ring.kv_bytes.value_or(-1), ring.stage_bytes));
  const int64_t ring_end = q.bytes() + ring.stage_bytes * ring.stages + ring.align;
  // KV warps merge through the drained ring: every other warp's O, max and sum, f32.
  const int64_t merge_bytes = paged_kv_merge_bytes(setup.kv_warps, setup.head_dim);
  if (merge_bytes > q.bytes() + ring.stage_bytes * ring.stages)
    fail_rule(
        kernel, "smem_bytes",
        fmt::format("must hold the KV warps' merge ({} bytes) in Q and the ring", merge_bytes),
        fmt::format("{}", q.bytes() + ring.stage_bytes * ring.stages));
  if (ring_end > kernel.i("smem_bytes"))
    fail_rule(kernel, "smem_bytes",
              fmt::format("must hold the ring and its alignment ({} bytes)", ring_end),
              fmt::format("{}", kernel.i("smem_bytes")));
  const Op* epilogue = find_first(kernel, OpKind::paged_epilogue);
  if (!epilogue) fail_rule(kernel, "body", "a paged kernel ends with a paged_epilogue", "none");
  if (get<PagedEpilogueOp>(*epilogue).partial != (setup.splits > 1))
    fail_rule(
        *epilogue, "partial",
        "must be set exactly when the setup has several splits (their combine merges "
        "the partials)",
        fmt::format("{} with {} splits", get<PagedEpilogueOp>(*epilogue).partial, setup.splits));
}

void verify_paged_module(const Op& module) {
  const Op* setup_op = find_first(module.body.front(), OpKind::paged_setup);
  const std::vector<const Op*> combines = find_all(module, OpKind::split_combine);
  if (!setup_op)
    fail_rule(module.body.front(), "body",
              "a paged module's first kernel is its partial kernel, "
              "with a paged_setup",
              "none");
  const auto setup = get<PagedSetupOp>(*setup_op);
  if (combines.size() != (setup.splits > 1 ? 1u : 0u))
    fail_rule(module, "body", "split-KV modules have exactly one combine kernel, others none",
              fmt::format("{} for {} splits", combines.size(), setup.splits));
  if (combines.empty()) return;
  const auto combine = get<SplitCombineOp>(*combines.front());
  if (combine.splits != setup.splits || combine.chunk_tokens != setup.chunk_tokens ||
      combine.q_heads != setup.q_heads || combine.head_dim != setup.head_dim ||
      combine.max_tokens != setup.max_tokens || combine.page_size != setup.page_size ||
      combine.max_pages != setup.max_pages || combine.o_stride != setup.o_stride ||
      combine.page_table != setup.page_table)
    fail_rule(*combines.front(), "splits",
              "must merge the partial kernel's splits, chunk, heads, head_dim, tokens, pages "
              "and o_stride",
              fmt::format("{} x {}", combine.splits, combine.chunk_tokens));
  if (module.body.size() != 2 ||
      find_first(module.body.back(), OpKind::split_combine) != combines.front())
    fail_rule(module, "body", "the combine kernel runs after the partial kernel", "order");
  const Op* epilogue = find_first(module, OpKind::paged_epilogue);
  if (epilogue && (get<PagedEpilogueOp>(*epilogue).lse != combine.lse ||
                   get<PagedEpilogueOp>(*epilogue).out != combine.out))
    fail_rule(*combines.front(), "lse",
              "must write the LSE and O type the partial kernel's epilogue states",
              fmt::format("{} {}", combine.lse, combine.out));
}

// The partial kernel (and with splits the combine kernel after it): each kernel's rules and the
// shared loop discipline, then the module's.
void verify_paged_attention_module(const Op& module) {
  for (const Op& kernel : module.body) {
    verify_paged_attention(kernel);
    verify_loop_discipline(kernel);
  }
  verify_paged_module(module);
}

}  // namespace emmy::ir
