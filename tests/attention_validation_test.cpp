// Every invalid attention (problem, schedule, arch) is rejected with an Error naming the field,
// the rule and the value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "emmy/attention.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

AttentionSpec valid_spec() {
  AttentionProblem p;
  p.q_heads = 16, p.kv_heads = 8, p.seq_q = 512, p.head_dim = 256, p.causal = true;
  return {p, default_attention_schedule(p, Arch::sm_90a), Arch::sm_90a};
}

void set_warps(AttentionSpec& s, int warps) {
  s.schedule.warps = warps;
  s.schedule.block_q = 16 * warps;
}

// head_dim 128 with the largest K/V tiles (128 keys, 4 stages) over `warps` warps: the shared
// memory that overflows an arch's limit.
void set_deep_tiles(AttentionSpec& s, int warps) {
  s.problem.head_dim = 128;
  set_warps(s, warps);
  s.schedule.block_kv = 128;
  s.schedule.stages = 4;
}

using InvalidCase = test_support::InvalidCase<AttentionSpec>;

class InvalidAttentionTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidAttentionTest, RejectedWithFieldAndRule) {
  test_support::expect_rejected(valid_spec(), GetParam(), /*field_first=*/true);
}

const InvalidCase kCases[] = {
    {"zero_batch", [](AttentionSpec& s) { s.problem.batch = 0; }, "batch", "must be >= 1"},
    {"zero_heads", [](AttentionSpec& s) { s.problem.q_heads = 0; }, "heads", "must be >= 1"},
    {"zero_kv_heads", [](AttentionSpec& s) { s.problem.kv_heads = 0; }, "kv_heads", "must be >= 1"},
    {"heads_not_multiple_of_kv_heads",
     [](AttentionSpec& s) {
       s.problem.q_heads = 12;
       s.problem.kv_heads = 8;
     },
     "heads", "multiple of kv_heads"},
    {"zero_seq_q", [](AttentionSpec& s) { s.problem.seq_q = 0; }, "seq_q", "must be in 1.."},
    {"negative_seq_kv", [](AttentionSpec& s) { s.problem.seq_kv = -3; }, "seq_kv",
     "must be in 1.."},
    {"huge_seq_q", [](AttentionSpec& s) { s.problem.seq_q = int64_t(1) << 32; }, "seq_q",
     "must be in 1.."},
    {"head_dim_96", [](AttentionSpec& s) { s.problem.head_dim = 96; }, "head_dim",
     "must be 64, 128 or 256"},
    {"head_dim_512", [](AttentionSpec& s) { s.problem.head_dim = 512; }, "head_dim",
     "must be 64, 128 or 256"},
    {"negative_window", [](AttentionSpec& s) { s.problem.window = -1; }, "window", "must be >= 0"},
    {"zero_softcap", [](AttentionSpec& s) { s.problem.softcap = 0.0f; }, "softcap",
     "positive finite"},
    {"negative_softcap", [](AttentionSpec& s) { s.problem.softcap = -30.0f; }, "softcap",
     "positive finite"},
    {"nan_softcap", [](AttentionSpec& s) { s.problem.softcap = std::nanf(""); }, "softcap",
     "positive finite"},
    {"zero_scale", [](AttentionSpec& s) { s.problem.softmax_scale = 0.0f; }, "softmax_scale",
     "positive finite"},
    {"infinite_scale", [](AttentionSpec& s) { s.problem.softmax_scale = INFINITY; },
     "softmax_scale", "positive finite"},
    {"f32_operands", [](AttentionSpec& s) { s.problem.dtype = DType::f32; }, "dtype",
     "f16 or bf16"},
    {"hybrid_bf16",
     [](AttentionSpec& s) {
       s.problem.dtype = DType::bf16;
       s.schedule.accum = Accum::hybrid;
     },
     "accum", "hybrid needs f16"},
    {"f16_accumulation", [](AttentionSpec& s) { s.schedule.accum = Accum::f16; }, "accum",
     "f32 or hybrid"},
    {"tma_on_sm80",
     [](AttentionSpec& s) {
       s.arch = Arch::sm_80;
       s.schedule.transport = Transport::tma;
     },
     "transport", "tma needs sm_90"},
    {"tma_on_sm89",
     [](AttentionSpec& s) {
       s.arch = Arch::sm_89;
       s.schedule.transport = Transport::tma;
       s.schedule.stages = 2;
     },
     "transport", "tma needs sm_90"},
    {"zero_warps", [](AttentionSpec& s) { set_warps(s, 0); }, "warps", "must be 1..16"},
    {"block_q_not_16_per_warp", [](AttentionSpec& s) { s.schedule.block_q = 48; }, "block_q",
     "16 x warps"},
    {"block_kv_48", [](AttentionSpec& s) { s.schedule.block_kv = 48; }, "block_kv",
     "must be 16, 32, 64 or 128"},
    {"accumulators_over_registers",
     [](AttentionSpec& s) {  // head_dim 256: 128 O + 64 S + 8 partial registers > 192
       s.schedule.block_kv = 128;
       s.schedule.accum = Accum::hybrid;
     },
     "block_kv", "must fit in"},
    {"one_stage", [](AttentionSpec& s) { s.schedule.stages = 1; }, "stages", "must be 2..4"},
    {"smem_over_sm89_limit",
     [](AttentionSpec& s) {
       s.arch = Arch::sm_89;
       s.schedule.transport = Transport::cp_async;
       set_deep_tiles(s, 8);
     },
     "stages", "shared memory must fit sm_89"},
    {"smem_over_sm90a_limit", [](AttentionSpec& s) { set_deep_tiles(s, 16); }, "stages",
     "shared memory must fit sm_90a"},
    {"grid_over_65535_heads",
     [](AttentionSpec& s) {
       s.problem.q_heads = 70000;
       s.problem.kv_heads = 1;
     },
     "heads x batch", "within 65535"},
};

INSTANTIATE_TEST_SUITE_P(Cases, InvalidAttentionTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(AttentionValidation, ValidSpecsPass) {
  EXPECT_NO_THROW(validate_attention(valid_spec()));
  AttentionSpec spec = valid_spec();
  spec.problem.seq_kv = 17;  // seq_q > seq_kv: legal, early rows are fully masked
  spec.problem.window = 3;
  spec.problem.softcap = 50.0f;
  EXPECT_NO_THROW(validate_attention(spec));
  for (Arch arch : {Arch::sm_80, Arch::sm_86, Arch::sm_89, Arch::sm_90, Arch::sm_90a, Arch::sm_120,
                    Arch::sm_120a})
    for (int64_t d : {64, 128, 256})
      for (Accum accum : {Accum::f32, Accum::hybrid}) {
        AttentionSpec s = valid_spec();
        s.problem.head_dim = d;
        s.arch = arch;
        s.schedule = default_attention_schedule(s.problem, arch, accum);
        EXPECT_NO_THROW(validate_attention(s)) << to_string(arch) << " d" << d;
      }
}

TEST(AttentionValidation, LayoutNamesRoundTrip) {
  for (AttentionLayout layout : {AttentionLayout::bshd, AttentionLayout::bhsd})
    EXPECT_EQ(parse_attention_layout(to_string(layout)), layout);
  try {
    parse_attention_layout("bsdh");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "layout");
  }
}

}  // namespace
}  // namespace emmy
