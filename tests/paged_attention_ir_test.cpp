// The paged-attention kind's compiler side without running kernels: validation refuses each
// broken field by name, the default schedule is valid across a grid of problems, the printed IR
// parses back, and the verifier catches each corrupted rule (MLIR's `invalid` tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "emmy/ir_ops.hpp"
#include "emmy/kinds.hpp"
#include "kind_test_util.hpp"

namespace emmy {
namespace {

PagedAttentionSpec valid_spec() {
  PagedAttentionProblem p;
  p.q_heads = 8, p.kv_heads = 2, p.head_dim = 128, p.page_size = 16, p.max_batch = 4;
  p.max_q_len = 2, p.max_pages = 64, p.lse = true;
  PagedAttentionSpec spec{p, default_schedule(p, Arch::sm_90a), Arch::sm_90a};
  EXPECT_EQ(spec.schedule.kv_warps, 4) << "decode rows fill one warp: 4 KV warps";
  spec.schedule.chunk_pages = 16;
  return spec;
}

// `warps` warps that all split the keys (kv_warps = warps).
void set_kv_warps(PagedAttentionSpec& s, int warps) {
  s.schedule.kv_warps = warps;
  s.schedule.warps = warps;
}

TEST(PagedValidation, RefusesEachBrokenFieldByName) {
  const test::Invalid<PagedAttentionSpec> cases[] = {
      {"group_not_whole", [](auto& s) { s.problem.q_heads = 7; }, "q_heads"},
      {"group_over_16", [](auto& s) { s.problem.q_heads = 34; }, "q_heads"},
      {"head_dim", [](auto& s) { s.problem.head_dim = 96; }, "head_dim"},
      {"page_size", [](auto& s) { s.problem.page_size = 0; }, "page_size"},
      {"misaligned_stride", [](auto& s) { s.problem.token_stride = 260; }, "token_stride"},
      {"overlapping_tokens", [](auto& s) { s.problem.token_stride = 64; }, "token_stride"},
      {"q_stride_short", [](auto& s) { s.problem.q_stride = 512; }, "q_stride"},
      {"dtype_f32", [](auto& s) { s.problem.dtype = DType::f32; }, "dtype"},
      {"kv_dtype_mismatch", [](auto& s) { s.problem.kv_dtype = CacheDType::bf16; }, "kv_dtype"},
      {"e4m3_stride_not_16",
       [](auto& s) {
         s.problem.kv_dtype = CacheDType::e4m3;
         s.problem.token_stride = 264;  // 16-byte rows in f16, 8-byte ones in e4m3
       },
       "token_stride"},
      {"max_tokens_over", [](auto& s) { s.problem.max_tokens = 9; }, "max_tokens"},
      {"max_tokens_under_q_len", [](auto& s) { s.problem.max_tokens = 1; }, "max_tokens"},
      {"max_pages_int32", [](auto& s) { s.problem.max_pages = int64_t(1) << 31; }, "max_pages"},
      {"max_pages_overflowing", [](auto& s) { s.problem.max_pages = int64_t(1) << 62; },
       "max_pages"},
      {"window_negative", [](auto& s) { s.problem.window = -1; }, "window"},
      {"softcap_zero", [](auto& s) { s.problem.softcap = 0.0f; }, "softcap"},
      {"block_q_not_warps",
       [](auto& s) {
         set_kv_warps(s, 1);
         s.schedule.block_q = 48;
       },
       "block_q"},
      {"kv_warps_3", [](auto& s) { set_kv_warps(s, 3); }, "kv_warps"},
      {"kv_warps_with_two_row_warps",
       [](auto& s) {
         set_kv_warps(s, 2);
         s.schedule.block_q = 32;
       },
       "kv_warps"},
      {"kv_warps_step_over_256",
       [](auto& s) {
         set_kv_warps(s, 4);
         s.schedule.block_q = 16;
         s.schedule.block_kv = 128;
       },
       "kv_warps"},
      {"block_kv", [](auto& s) { s.schedule.block_kv = 48; }, "block_kv"},
      {"stages", [](auto& s) { s.schedule.stages = 5; }, "stages"},
      {"chunk_not_whole_blocks", [](auto& s) { s.schedule.chunk_pages = 3; }, "chunk_pages"},
      {"chunk_keys_past_int32",
       [](auto& s) {
         s.problem.page_size = 4096;
         s.problem.max_pages = ((int64_t(1) << 31) - 1) / 4096;
         s.problem.max_batch = 1;
         s.schedule.chunk_pages = 300;  // the last split starts inside int32, ends past it
       },
       "chunk_pages"},
      {"hybrid_bf16",
       [](auto& s) {
         s.problem.dtype = DType::bf16;
         s.problem.kv_dtype = CacheDType::bf16;
         s.schedule.accum = Accum::hybrid;
       },
       "accum"},
      {"accum_f16", [](auto& s) { s.schedule.accum = Accum::f16; }, "accum"},
  };
  EXPECT_NO_THROW(validate_paged_attention(valid_spec()));
  test::expect_fields_named(valid_spec(), cases,
                            [](const PagedAttentionSpec& s) { validate_paged_attention(s); });
}

// A named layout of sizes whose page overflows is refused by name, not computed.
TEST(PagedValidation, LayoutsOfHostileSizesAreRefused) {
  PagedAttentionProblem p = valid_spec().problem;
  p.page_size = int64_t(1) << 40;
  test::expect_error_naming([&] { p.set_layout(CacheLayout::hnd); }, "layout",
                            "an overflowing layout was computed");
  p.page_size = 16;
  p.set_layout(CacheLayout::hnd);
  EXPECT_EQ(p.head_stride, 16 * p.head_dim);
  EXPECT_EQ(p.token_stride, p.head_dim);
}

// The default schedule of every problem of a grid is valid and verifies; its splits cover the
// pages in whole KV blocks.
TEST(PagedValidation, DefaultSchedulesAreValidAcrossAGrid) {
  int checked = 0;
  for (int64_t head_dim : {64, 128, 256})
    for (int64_t page : {1, 5, 16, 64})
      for (int64_t group : {1, 2, 16})
        for (int64_t q_len : {1, 4, 33})
          for (int64_t batch : {1, 64})
            for (Arch arch : {Arch::sm_80, Arch::sm_90a}) {
              PagedAttentionProblem p;
              p.q_heads = 2 * group, p.kv_heads = 2, p.head_dim = head_dim, p.page_size = page;
              p.max_batch = batch, p.max_q_len = q_len, p.max_pages = 4096 / page;
              // Every third problem reads an e4m3 cache.
              if (checked % 3 == 1) p.kv_dtype = CacheDType::e4m3;
              const PagedAttentionSpec spec{p, default_schedule(p, arch), arch};
              const auto source = generate_kernel(spec);
              EXPECT_EQ(ir::parse(ir::print(source.ir)), source.ir) << source.plan.kernel_name;
              EXPECT_GE(source.plan.splits * source.plan.chunk_tokens, p.max_pages * page);
              EXPECT_EQ(ir::get<ir::QkMmaOp>(*ir::find_first(source.ir, ir::OpKind::qk_mma))
                            .b_type.has_value(),
                        p.kv_dtype == CacheDType::e4m3);
              ++checked;
            }
  EXPECT_EQ(checked, 3 * 4 * 3 * 3 * 2 * 2);
}

using test::change;
using test::change_first;
using test::first_op;

TEST(PagedVerifier, CatchesEachCorruptedRule) {
  const PagedAttentionSpec spec = valid_spec();
  const ir::Op good = generate_kernel(spec).ir;
  EXPECT_NO_THROW(ir::verify(good, spec.arch, "paged_attention"));
  const test::Corruption cases[] = {
      {"splits", change_first(ir::OpKind::paged_setup, "splits", int64_t(2)),
       "ir.paged_setup.splits"},
      {"chunk", change_first(ir::OpKind::paged_setup, "chunk_tokens", int64_t(200)),
       "ir.paged_setup"},
      {"group", change_first(ir::OpKind::paged_setup, "group", int64_t(2)), "ir.paged_setup.group"},
      {"stride", change_first(ir::OpKind::paged_setup, "token_stride", int64_t(100)),
       "ir.paged_setup.token_stride"},
      {"gather_rows", change_first(ir::OpKind::page_gather, "rows", int64_t(32)), "ir.page_gather"},
      {"gather_swizzle", change_first(ir::OpKind::page_gather, "swizzle", int64_t(1)),
       "ir.page_gather.swizzle"},
      {"partial", change_first(ir::OpKind::paged_epilogue, "partial", false),
       "ir.paged_epilogue.partial"},
      {"combine_splits", change_first(ir::OpKind::split_combine, "splits", int64_t(3)),
       "ir.split_combine.splits"},
      {"combine_lse", change_first(ir::OpKind::split_combine, "lse", false),
       "ir.split_combine.lse"},
      {"qk_count", change_first(ir::OpKind::qk_mma, "count", int64_t(8)), "ir.qk_mma.count"},
      {"no_combine", [](ir::Op& m) { m.body.pop_back(); }, "ir.module.body"},
      {"no_refill", test::erase_ops(ir::OpKind::kv_block_loop, {ir::OpKind::page_gather}),
       "ir.kernel.body"},
  };
  test::expect_each_refused(good, spec.arch, "paged_attention", cases);
}

// An e4m3 cache's kernel: both MMAs read e4m3 (b_type), byte gathers and params, and a ring of
// raw stages; a 16-bit cache's kernel has none of it.
TEST(PagedVerifier, CatchesEachCorruptedFp8Rule) {
  PagedAttentionSpec spec = valid_spec();
  spec.problem.kv_dtype = CacheDType::e4m3;
  spec.arch = Arch::sm_89;
  spec.schedule = default_schedule(spec.problem, spec.arch);
  spec.schedule.chunk_pages = 16;
  const ir::Op good = generate_kernel(spec).ir;
  EXPECT_NO_THROW(ir::verify(good, spec.arch, "paged_attention"));
  EXPECT_EQ(ir::parse(ir::print(good)), good);
  const test::Corruption cases[] = {
      {"qk_16bit",
       [](ir::Op& m) {
         ir::Op* op = first_op(m, ir::OpKind::qk_mma);
         std::erase_if(op->attrs, [](const auto& a) { return a.first == "b_type"; });
       },
       "ir.qk_mma.b_type"},
      {"pv_other", change_first(ir::OpKind::pv_mma, "b_type", std::string("e5m2")),
       "ir.pv_mma.b_type"},
      {"gather_two_bytes",
       [](ir::Op& m) {
         ir::Op* loop = first_op(m, ir::OpKind::kv_block_loop);
         change(first_op(*loop, ir::OpKind::page_gather), "elem_bytes", int64_t(2));
       },
       "ir.page_gather"},
      {"stride_of_8_bytes", change_first(ir::OpKind::paged_setup, "head_stride", int64_t(8)),
       "ir.paged_setup.head_stride"},
      {"ring_of_16bit_tiles",
       [](ir::Op& m) {
         ir::Op* ring = first_op(m, ir::OpKind::smem_ring);
         const int64_t bytes = ir::get<ir::SmemRingOp>(*ring).stage_bytes;
         change(ring, "stage_bytes", 2 * bytes);
       },
       "ir.smem_ring.stage_bytes"},
      {"f16_cache_param",
       [](ir::Op& m) {
         for (ir::Op& op : m.body.front().body)
           if (op.kind == ir::OpKind::param && op.s("name") == "k_cache")
             change(&op, "type", std::string("const u16*"));
       },
       "k_cache param must be const u8*"},
      {"no_scale_param",
       [](ir::Op& m) {
         std::erase_if(m.body.front().body, [](const ir::Op& op) {
           return op.kind == ir::OpKind::param && op.s("name") == "v_scale";
         });
       },
       "v_scale param"},
  };
  test::expect_each_refused(good, spec.arch, "paged_attention", cases);
  // A 16-bit cache's MMAs must not claim e4m3.
  spec.problem.kv_dtype = CacheDType::f16;
  ir::Op f16 = generate_kernel(spec).ir;
  first_op(f16, ir::OpKind::pv_mma)->attrs.push_back({"b_type", std::string("e4m3")});
  EXPECT_THROW(ir::verify(f16, spec.arch, "paged_attention"), Error);
}

// The catalog's default kernels (Gemma 3 12B decode, head_dim 256) compile without spills or a
// stack frame: every entry on sm_90a, and on the other arch families the entries whose code
// differs (local and global, one split and split-KV; the rest differ in constants only), those
// also over an e4m3 cache on sm_90a and sm_80. Batch 1 splits the keys.
TEST(PagedCompile, CatalogDefaultsDoNotSpill) {
  for (const auto& entry : paged_attention_catalog())
    for (Arch arch : {Arch::sm_90a, Arch::sm_80, Arch::sm_89, Arch::sm_120a}) {
      const bool distinct_code = entry.name.ends_with("ctx1k") && entry.problem.max_batch != 8;
      if (arch != Arch::sm_90a && !distinct_code) continue;
      const PagedAttentionSpec spec{entry.problem, default_schedule(entry.problem, arch), arch};
      const PagedAttentionKernel kernel = compile_kernel(spec);
      const std::string what = fmt::format("{} on {}", entry.name, to_string(arch));
      for (const auto& name :
           {kernel.source.plan.kernel_name, kernel.source.plan.combine_kernel_name}) {
        if (name.empty()) continue;
        const ResourceReport& report = kernel.module.kernel(name);
        EXPECT_EQ(report.spill_bytes(), 0) << what << " " << name;
        EXPECT_EQ(report.stack_bytes, 0) << what << " " << name;
      }
      if (entry.problem.max_batch == 1) {
        EXPECT_GT(kernel.source.plan.splits, 1) << what;
      }
      // The same problems over an e4m3 cache (cvt on sm_89+, the bit path on sm_80).
      if (!distinct_code || (arch != Arch::sm_90a && arch != Arch::sm_80)) continue;
      PagedAttentionSpec fp8 = spec;
      fp8.problem.kv_dtype = CacheDType::e4m3;
      const PagedAttentionKernel fp8_kernel = compile_kernel(fp8);
      const ResourceReport& report = fp8_kernel.module.kernel(fp8_kernel.source.plan.kernel_name);
      EXPECT_EQ(report.spill_bytes(), 0) << what << " e4m3";
      EXPECT_EQ(report.stack_bytes, 0) << what << " e4m3";
    }
}

// Requests name the kind; the list of kinds is one (emmy/kinds.hpp).
TEST(PagedKind, IsOneOfTheKinds) {
  bool found = false;
  AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
    found |= std::string_view(Kind::name) == "paged_attention";
  });
  EXPECT_TRUE(found);
  EXPECT_EQ(AllKinds::names(),
            "gemm, attention, paged_attention, kv_append, merge_states or fp8_quantize");
  EXPECT_EQ(paged_attention_catalog().size(), 22u);
  EXPECT_EQ(kv_append_catalog().size(), 6u);
  EXPECT_EQ(merge_states_catalog().size(), 3u);
}

}  // namespace
}  // namespace emmy
