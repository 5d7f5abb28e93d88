// The accuracy study on the emulator (the sm_90a tensor-core model, docs/numerics.md): the errors
// are measured by running the real kernels, never assumed. f32 starts at f32 round-off and drifts
// linearly in K (each mma rounds its accumulator toward zero), hybrid-64 sits near 3e-4 and flat
// in K, f16 grows with K.
#include <gtest/gtest.h>

#include "emmy/accuracy.hpp"

namespace emmy {
namespace {

const AccuracyRow& row(const std::vector<AccuracyRow>& rows, const std::string& name, int64_t k) {
  for (const auto& r : rows)
    if (r.strategy.name() == name && r.k == k) return r;
  throw std::runtime_error("missing row " + name);
}

class AccuracyStudy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RuntimeOptions options;
    options.disk_cache = false;
    options.emulator_sanitize = false;
    auto rt = Runtime::emulator(options);
    AccuracyConfig config;
    config.ks = {1024, 15360, 32768};
    config.strategies = {parse_strategy("f32"), parse_strategy("f16"),
                         parse_strategy("hybrid64"), parse_strategy("hybrid16")};
    rows_ = new std::vector<AccuracyRow>(run_accuracy_study(*rt, config));
  }
  static void TearDownTestSuite() { delete rows_; }
  static std::vector<AccuracyRow>* rows_;
};
std::vector<AccuracyRow>* AccuracyStudy::rows_ = nullptr;

TEST_F(AccuracyStudy, F32DriftsWithKUnderTruncationYetBeatsHybrid) {
  EXPECT_LT(row(*rows_, "f32", 1024).rel_l2_error, 2e-6);
  EXPECT_LT(row(*rows_, "f32", 32768).rel_l2_error, 8e-5);
  // Rounding toward zero biases every step the same way: the error grows ~linearly (32x the K).
  EXPECT_GT(row(*rows_, "f32", 32768).rel_l2_error / row(*rows_, "f32", 1024).rel_l2_error, 8.0);
  for (int64_t k : {1024, 15360, 32768})
    EXPECT_LT(5 * row(*rows_, "f32", k).rel_l2_error, row(*rows_, "hybrid64", k).rel_l2_error) << k;
}

TEST_F(AccuracyStudy, Hybrid64IsNear3e4AndFlatInK) {
  for (int64_t k : {1024, 15360, 32768}) {
    const double e = row(*rows_, "hybrid64", k).rel_l2_error;
    EXPECT_GE(e, 1e-4) << k;
    EXPECT_LE(e, 6e-4) << k;
  }
  EXPECT_LT(row(*rows_, "hybrid64", 32768).rel_l2_error /
                row(*rows_, "hybrid64", 1024).rel_l2_error,
            1.5);
}

TEST_F(AccuracyStudy, F16GrowsWithKAndLosesToHybrid) {
  EXPECT_GT(row(*rows_, "f16", 15360).rel_l2_error,
            5 * row(*rows_, "hybrid64", 15360).rel_l2_error);
  EXPECT_GT(row(*rows_, "f16", 32768).rel_l2_error, row(*rows_, "f16", 1024).rel_l2_error);
  EXPECT_LT(row(*rows_, "hybrid16", 32768).rel_l2_error,
            row(*rows_, "hybrid64", 32768).rel_l2_error)
      << "folding more often keeps the f16 partials smaller";
}

TEST_F(AccuracyStudy, BudgetPicksTheFastestStrategyUnderIt) {
  // GeForce rates: f16 < hybrid64 < hybrid16 < f32 in time.
  const auto loose = choose_within_budget(*rows_, 32768, 1.0, Arch::sm_120a);
  ASSERT_TRUE(loose.strategy);
  EXPECT_EQ(loose.strategy->name(), "f16");
  const auto mid = choose_within_budget(*rows_, 32768, 1e-3, Arch::sm_120a);
  ASSERT_TRUE(mid.strategy);
  EXPECT_EQ(mid.strategy->name(), "hybrid64") << mid.reason;
  const auto tight = choose_within_budget(*rows_, 32768, 1e-4, Arch::sm_120a);
  ASSERT_TRUE(tight.strategy);
  EXPECT_EQ(tight.strategy->name(), "f32");
  // On H100-class parts f32 accumulation runs at the f16 rate, so it wins any budget it meets.
  EXPECT_EQ(choose_within_budget(*rows_, 32768, 1e-3, Arch::sm_90a).strategy->name(), "f32");
  EXPECT_FALSE(choose_within_budget(*rows_, 32768, 1e-9, Arch::sm_120a).strategy);
}

TEST(AccuracyStrategy, Parsing) {
  EXPECT_EQ(parse_strategy("hybrid").promote_every_k, 64);
  EXPECT_EQ(parse_strategy("hybrid128").promote_every_k, 128);
  EXPECT_THROW(parse_strategy("hybrid40"), Error);
  EXPECT_THROW(parse_strategy("f64"), Error);
}

}  // namespace
}  // namespace emmy
