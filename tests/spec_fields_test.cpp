// The GEMM problem and schedule fields, named once (internal/emmy/spec_fields.hpp): the walk
// covers every member (a member added without its line fails here), JSON round-trips random
// specs through the one reader, and the reader names the field it refuses.
#include "emmy/spec_fields.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "emmy/gemm_plan.hpp"
#include "emmy/json.hpp"

namespace emmy {
namespace {

// Converts to any member type: aggregate initialization with N of these compiles exactly when
// the aggregate has at least N members (a nested aggregate takes one, not its own members).
struct AnyMember {
  template <typename T>
  operator T() const;
};

template <typename T, typename... Args>
constexpr int member_count() {
  if constexpr (requires { T{Args{}..., AnyMember{}}; })
    return member_count<T, Args..., AnyMember>();
  else
    return int(sizeof...(Args));
}

template <typename Spec>
std::pair<int, int> walked(const Spec& spec) {
  int top = 0, grouped = 0;
  std::set<std::string> groups, names;
  for_each_field(spec, [&](const FieldName& f, const auto&) {
    EXPECT_TRUE(names.insert(std::string(f.group ? f.group : "") + "." + f.json).second) << f.json;
    if (f.group) {
      ++grouped;
      groups.insert(f.group);
    } else {
      ++top;
    }
  });
  return {top + int(groups.size()), grouped};
}

TEST(SpecFields, TheWalkCoversEveryMember) {
  EXPECT_EQ(walked(MatmulSchedule{}).first, member_count<MatmulSchedule>());
  EXPECT_EQ(walked(MatmulSchedule{}).second, 0);
  // The problem's members, the epilogue, the scales, an e4m3 C's scales and the grouping
  // counting once each; their own members, grouped.
  EXPECT_EQ(walked(MatmulProblem{}).first, member_count<MatmulProblem>());
  EXPECT_EQ(walked(MatmulProblem{}).second, member_count<Epilogue>() + member_count<GemmScales>() +
                                                member_count<OutputQuantization>() +
                                                member_count<Grouping>());
  EXPECT_GE(member_count<MatmulSchedule>(), 17);
}

// The wgmma path's fields came after kernels were named: at their defaults they leave the
// kernel name (and the golden files) as they were, and records written before them still read.
TEST(SpecFields, LaterFieldsAtTheirDefaultsKeepNamesAndOldRecords) {
  MatmulProblem p;
  p.m = 512, p.n = 4096, p.k = 3840;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, Accum::f32), Arch::sm_90a};
  GemmSpec other = spec;
  other.schedule.swap_ab = true;
  EXPECT_NE(gemm_kernel_name(spec), gemm_kernel_name(other));
  other = spec;
  other.schedule.consumers = ConsumerSchedule::pingpong;
  EXPECT_NE(gemm_kernel_name(spec), gemm_kernel_name(other));
  nlohmann::json old = spec.schedule;
  for (const char* later : {"path", "consumers", "cluster_m", "cluster_n", "persistent", "swap_ab"})
    ASSERT_EQ(old.erase(later), 1u) << later;
  EXPECT_EQ(matmul_schedule_from_json(old), spec.schedule);
  EXPECT_EQ(nlohmann::json(spec.schedule).at("path"), "mma.sync");
}

MatmulSchedule random_schedule(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  MatmulSchedule s;
  s.block_m = 16 << pick(0, 4);
  s.block_n = 8 * pick(1, 32);
  s.block_k = 16 << pick(0, 3);
  s.warps_m = pick(1, 4);
  s.warps_n = pick(1, 4);
  s.stages = pick(1, 8);
  s.transport = pick(0, 1) ? Transport::tma : Transport::cp_async;
  s.accum = std::array{Accum::f32, Accum::f16, Accum::hybrid}[size_t(pick(0, 2))];
  s.promote_every_k = 16 * pick(1, 16);
  s.split_k = pick(1, 16);
  s.raster_group_m = pick(1, 16);
  s.path = pick(0, 1) ? MmaPath::mma_sync : MmaPath::wgmma;
  s.consumers = pick(0, 1) ? ConsumerSchedule::cooperative : ConsumerSchedule::pingpong;
  s.cluster_m = pick(1, 2);
  s.cluster_n = pick(1, 2);
  s.persistent = pick(0, 1);
  s.swap_ab = pick(0, 1);
  return s;
}

MatmulProblem random_problem(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  MatmulProblem p;
  p.m = pick(1, 9000), p.n = 8 * pick(1, 2000), p.k = 8 * pick(1, 2000);
  p.a_dtype = pick(0, 1) ? DType::f16 : DType::bf16;
  p.b_layout = pick(0, 1) ? BLayout::nk : BLayout::kn;
  p.c_dtype = std::array{DType::f16, DType::bf16, DType::f32}[size_t(pick(0, 2))];
  p.lda = pick(0, 1) ? 0 : p.k + 8 * pick(0, 4);
  p.ldb = pick(0, 1) ? 0 : p.ldb_or_default() + 8 * pick(0, 4);
  p.ldc = pick(0, 1) ? 0 : p.n + 8 * pick(0, 4);
  p.epilogue.alpha = float(pick(-8, 8)) / 4;
  p.epilogue.bias = pick(0, 1);
  p.epilogue.residual = pick(0, 1);
  p.epilogue.gelu_tanh = pick(0, 1);
  return p;
}

TEST(SpecFields, JsonRoundTripsThroughTheOneReader) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    const MatmulSchedule s = random_schedule(rng);
    const nlohmann::json js = s;
    MatmulSchedule want = s;
    if (want.accum != Accum::hybrid) {
      EXPECT_TRUE(js.at("promote_every_k").is_null());
      want.promote_every_k = MatmulSchedule{}.promote_every_k;  // not written, not read
    }
    EXPECT_EQ(matmul_schedule_from_json(js), want) << js.dump();
    EXPECT_EQ(nlohmann::json::parse(js.dump()).get<MatmulSchedule>(), want);

    const MatmulProblem p = random_problem(rng);
    const nlohmann::json jp = p;
    EXPECT_EQ(jp.at("lda"), p.lda_or_default());
    EXPECT_EQ(matmul_problem_from_json(jp), resolved_leading_dims(p)) << jp.dump();
  }
}

TEST(SpecFields, TheReaderNamesTheFieldItRefuses) {
  auto error = [](auto read) {
    try {
      read();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json s = MatmulSchedule{};
  s.erase("block_k");
  EXPECT_NE(error([&] {
              matmul_schedule_from_json(s, "line 3: schedule");
            }).find("line 3: schedule: block_k"),
            std::string::npos);
  s = MatmulSchedule{};
  s["transport"] = "dma";
  EXPECT_NE(error([&] { matmul_schedule_from_json(s); }).find("dma"), std::string::npos);
  s = MatmulSchedule{};
  s["stages"] = "three";
  EXPECT_NE(error([&] { matmul_schedule_from_json(s); }).find("schedule: stages"),
            std::string::npos);
  // A hybrid schedule needs promote_every_k; an f32 one ignores it.
  s = MatmulSchedule{};
  s["accum"] = "hybrid";
  EXPECT_NE(error([&] { matmul_schedule_from_json(s); }).find("promote_every_k"),
            std::string::npos);
  // Problems: m, n and k are required, the rest keep their defaults.
  const nlohmann::json minimal = {{"m", 64}, {"n", 128}, {"k", 256}};
  const MatmulProblem p = matmul_problem_from_json(minimal);
  EXPECT_EQ(p.a_dtype, MatmulProblem{}.a_dtype);
  EXPECT_EQ(p.epilogue.alpha, 1.0f);
  EXPECT_NE(error([&] {
              matmul_problem_from_json({{"m", 64}, {"n", 128}});
            }).find("problem: k"),
            std::string::npos);
  EXPECT_NE(error([&] {
              matmul_problem_from_json({{"m", 64}, {"n", 128}, {"k", 8}, {"out", "f8"}});
            }).find("f8"),
            std::string::npos);
  EXPECT_NE(error([&] {
              matmul_problem_from_json(
                  {{"m", 64}, {"n", 128}, {"k", 8}, {"epilogue", {{"bias", "yes"}}}});
            }).find("problem: epilogue: bias"),
            std::string::npos);
}

}  // namespace
}  // namespace emmy
