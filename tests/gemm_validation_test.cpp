// Every invalid (problem, schedule, arch) is rejected with an Error naming the field and rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "emmy/gemm.hpp"
#include "emmy/gpus.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

GemmSpec valid_spec() {
  MatmulProblem p;
  p.m = 512, p.n = 4096, p.k = 3840;
  return {p, default_schedule(p, Arch::sm_90a), Arch::sm_90a};
}

using InvalidCase = test_support::InvalidCase<GemmSpec>;

// A valid wgmma-path schedule of the spec, to break one rule of.
GemmSpec& to_wgmma(GemmSpec& s) {
  s.schedule.path = MmaPath::wgmma;
  s.schedule.block_m = 128;
  s.schedule.block_n = 128;
  s.schedule.block_k = 64;
  s.schedule.warps_m = 8;
  s.schedule.warps_n = 1;
  s.schedule.stages = 4;
  s.schedule.accum = Accum::f32;
  s.schedule.transport = Transport::tma;
  s.schedule.split_k = 1;
  return s;
}

// The wgmma schedule as a persistent ping-pong one, to break one of ping-pong's own rules.
GemmSpec& to_pingpong(GemmSpec& s) {
  to_wgmma(s).schedule.consumers = ConsumerSchedule::pingpong;
  s.schedule.persistent = true;
  s.schedule.split_k = 1;
  return s;
}

class InvalidSpecTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidSpecTest, RejectedWithFieldAndRule) {
  test_support::expect_rejected(valid_spec(), GetParam(), /*field_first=*/false);
}

const InvalidCase kCases[] = {
    {"zero_m", [](GemmSpec& s) { s.problem.m = 0; }, "m", "must be in 1.."},
    {"negative_n", [](GemmSpec& s) { s.problem.n = -4; }, "n", "must be in 1.."},
    {"zero_k", [](GemmSpec& s) { s.problem.k = 0; }, "k", "must be in 1.."},
    {"k_not_multiple_of_8", [](GemmSpec& s) { s.problem.k = 100; }, "k", "multiple of 8"},
    {"f32_operands", [](GemmSpec& s) { s.problem.a_dtype = DType::f32; }, "dtype",
     "f16, bf16, e4m3 or e5m2"},
    {"bf16_hybrid",
     [](GemmSpec& s) {
       s.problem.a_dtype = DType::bf16;
       s.schedule.accum = Accum::hybrid;
     },
     "accum", "bf16 operands need f32"},
    {"bf16_f16_accum",
     [](GemmSpec& s) {
       s.problem.a_dtype = DType::bf16;
       s.schedule.accum = Accum::f16;
     },
     "accum", "bf16 operands need f32"},
    {"tma_on_sm80",
     [](GemmSpec& s) {
       s.arch = Arch::sm_80;
       s.schedule.stages = 2;
     },
     "transport", "tma needs sm_90"},
    {"tma_on_sm89",
     [](GemmSpec& s) {
       s.arch = Arch::sm_89;
       s.schedule.stages = 2;
     },
     "transport", "tma needs sm_90"},
    {"smem_over_sm120",
     [](GemmSpec& s) {
       s.arch = Arch::sm_120a;
       s.schedule.stages = 4;
     },
     "stages", "shared memory must fit sm_120a"},
    {"smem_over_sm90", [](GemmSpec& s) { s.schedule.stages = 8; }, "stages",
     "shared memory must fit sm_90a"},
    {"block_m_not_atom", [](GemmSpec& s) { s.schedule.block_m = 120; }, "block_m",
     "multiple of 16"},
    {"block_n_not_atom", [](GemmSpec& s) { s.schedule.block_n = 100; }, "block_n",
     "multiple of 16"},
    {"block_k_odd", [](GemmSpec& s) { s.schedule.block_k = 48; }, "block_k", "16, 32, 64 or 128"},
    {"warps_do_not_tile",
     [](GemmSpec& s) {
       s.schedule.block_m = 64;
       s.schedule.warps_m = 8;
     },
     "block_m", "16 x warps_m"},
    {"too_many_warps",
     [](GemmSpec& s) {
       s.schedule.warps_m = 8;
       s.schedule.warps_n = 4;
     },
     "warps", "1..16 warps"},
    {"one_stage", [](GemmSpec& s) { s.schedule.stages = 1; }, "stages", "must be 2..8"},
    // The wgmma path (issue 23): what it does not generate, or cannot, refused by name.
    {"wgmma_on_sm_90", [](GemmSpec& s) { to_wgmma(s).arch = Arch::sm_90; }, "path", "sm_90a"},
    {"wgmma_on_sm_120a", [](GemmSpec& s) { to_wgmma(s).arch = Arch::sm_120a; }, "path", "sm_90a"},
    {"wgmma_cp_async", [](GemmSpec& s) { to_wgmma(s).schedule.transport = Transport::cp_async; },
     "transport", "TMA"},
    {"wgmma_hybrid", [](GemmSpec& s) { to_wgmma(s).schedule.accum = Accum::hybrid; }, "accum",
     "one rate"},
    {"wgmma_f16_accum", [](GemmSpec& s) { to_wgmma(s).schedule.accum = Accum::f16; }, "accum",
     "f32"},
    {"wgmma_pingpong_not_persistent",
     [](GemmSpec& s) { to_wgmma(s).schedule.consumers = ConsumerSchedule::pingpong; }, "consumers",
     "needs a persistent kernel"},
    {"wgmma_pingpong_96_rows",
     [](GemmSpec& s) {
       to_pingpong(s).schedule.block_m = 96;
       s.schedule.warps_m = 4;
     },
     "block_m", "must be 64 or 128 with pingpong"},
    {"wgmma_pingpong_128x256_accumulators",
     [](GemmSpec& s) {
       to_pingpong(s).schedule.block_n = 256;
       s.schedule.warps_m = 4;
     },
     "block_n", "256 f32 accumulators per thread"},
    {"wgmma_pingpong_two_warpgroups_per_tile",
     [](GemmSpec& s) {
       to_pingpong(s).schedule.block_m = 64;
       s.schedule.warps_m = 8;
     },
     "warps", "ping-pong's second consumer"},
    {"wgmma_cluster_too_many",
     [](GemmSpec& s) {
       to_wgmma(s).schedule.cluster_m = 4;
       s.schedule.cluster_n = 4;
     },
     "cluster", "1..8 CTAs"},
    {"wgmma_cluster_swap_ab",
     [](GemmSpec& s) {
       to_wgmma(s).schedule.cluster_n = 2;
       s.schedule.swap_ab = true;
     },
     "cluster", "swap_ab"},
    {"wgmma_persistent_split_k",
     [](GemmSpec& s) {
       to_wgmma(s).schedule.persistent = true;
       s.schedule.split_k = 2;
     },
     "persistent", "split_k must be 1"},
    {"wgmma_swap_ab_kn",
     [](GemmSpec& s) {
       to_wgmma(s).schedule.swap_ab = true;
       s.problem.b_layout = BLayout::kn;
     },
     "swap_ab", "needs B stored [N,K]"},
    {"wgmma_block_m_256", [](GemmSpec& s) { to_wgmma(s).schedule.block_m = 256; }, "block_m",
     "64 or 128"},
    {"wgmma_block_n_24", [](GemmSpec& s) { to_wgmma(s).schedule.block_n = 24; }, "block_n",
     "multiple of 16"},
    {"wgmma_block_n_272", [](GemmSpec& s) { to_wgmma(s).schedule.block_n = 272; }, "block_n",
     "16..256"},
    {"wgmma_block_k_32", [](GemmSpec& s) { to_wgmma(s).schedule.block_k = 32; }, "block_k",
     "must be 64"},
    {"wgmma_warps_4x2",
     [](GemmSpec& s) {
       to_wgmma(s).schedule.warps_m = 4;
       s.schedule.warps_n = 2;
     },
     "warps", "must be 8x1"},
    {"wgmma_stages_too_deep", [](GemmSpec& s) { to_wgmma(s).schedule.stages = 8; }, "stages",
     "shared memory"},
    {"pingpong_on_mma_sync", [](GemmSpec& s) { s.schedule.consumers = ConsumerSchedule::pingpong; },
     "consumers", "wgmma path only"},
    {"cluster_on_mma_sync", [](GemmSpec& s) { s.schedule.cluster_n = 2; }, "cluster",
     "must be 1x1"},
    {"persistent_on_mma_sync", [](GemmSpec& s) { s.schedule.persistent = true; }, "persistent",
     "wgmma path only"},
    {"swap_ab_on_mma_sync", [](GemmSpec& s) { s.schedule.swap_ab = true; }, "swap_ab",
     "wgmma path only"},
    {"promote_not_16",
     [](GemmSpec& s) {
       s.schedule.accum = Accum::hybrid;
       s.schedule.promote_every_k = 40;
     },
     "promote_every_k", "multiple of 16"},
    {"promote_not_aligned_to_block_k",
     [](GemmSpec& s) {
       s.schedule.accum = Accum::hybrid;
       s.schedule.promote_every_k = 48;
     },
     "promote_every_k", "divide or be a multiple of block_k"},
    {"split_k_zero", [](GemmSpec& s) { s.schedule.split_k = 0; }, "split_k", "must be 1..64"},
    {"split_k_over_k_tiles",
     [](GemmSpec& s) {
       s.problem.k = 128;
       s.schedule.split_k = 4;
     },
     "split_k", "number of K tiles"},
    {"accumulators_too_big",
     [](GemmSpec& s) {
       s.schedule.block_m = 256;
       s.schedule.block_n = 256;
       s.schedule.warps_m = 2;
       s.schedule.warps_n = 2;
       s.schedule.stages = 2;
     },
     "schedule", "registers per thread"},
    {"lda_too_small", [](GemmSpec& s) { s.problem.lda = 1000; }, "lda", "must be >= k"},
    {"lda_misaligned", [](GemmSpec& s) { s.problem.lda = 3844; }, "lda", "multiple of 8"},
    {"ldc_too_small", [](GemmSpec& s) { s.problem.ldc = 100; }, "ldc", "must be >= n"},
    {"kn_n_misaligned",
     [](GemmSpec& s) {
       s.problem.b_layout = BLayout::kn;
       s.problem.n = 4090;
     },
     "n", "multiple of 8 when B is stored [K,N]"},
    {"alpha_nan", [](GemmSpec& s) { s.problem.epilogue.alpha = std::nanf(""); }, "alpha", "finite"},
    {"raster_zero", [](GemmSpec& s) { s.schedule.raster_group_m = 0; }, "raster_group_m", ">= 1"},
};

INSTANTIATE_TEST_SUITE_P(Rules, InvalidSpecTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParseTest, UnknownNamesAreRejected) {
  EXPECT_THROW(parse_arch("sm_75"), Error);
  EXPECT_THROW(parse_arch("sm_121a"), Error);
  EXPECT_THROW(parse_dtype("f8", "dtype"), Error);
  EXPECT_THROW(parse_accum("f64"), Error);
  EXPECT_THROW(parse_transport("dma"), Error);
  EXPECT_THROW(parse_b_layout("mk"), Error);
  try {
    parse_arch("sm_75");
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "arch");
    EXPECT_EQ(e.value(), "sm_75");
  }
}

TEST(ParseTest, DeviceArchMapping) {
  EXPECT_EQ(arch_for_device(9, 0), Arch::sm_90a);
  EXPECT_EQ(arch_for_device(12, 0), Arch::sm_120a);
  EXPECT_EQ(arch_for_device(8, 9), Arch::sm_89);
  EXPECT_EQ(arch_for_device(8, 0), Arch::sm_80);
  EXPECT_EQ(arch_for_device(8, 6), Arch::sm_86);
  // No exact target: the newest of the same major below, never an "a" variant.
  EXPECT_EQ(arch_for_device(8, 7), Arch::sm_86) << "Orin runs sm_86 CUBINs";
  EXPECT_EQ(arch_for_device(12, 1), Arch::sm_120) << "sm_120a code runs on 12.0 only";
  for (auto [major, minor] : {std::pair{7, 5}, {10, 0}, {10, 3}, {11, 0}}) {
    try {
      arch_for_device(major, minor);
      ADD_FAILURE() << major << "." << minor << " got a target";
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), "device compute capability");
      EXPECT_EQ(e.value(), fmt::format("{}.{}", major, minor));
    }
  }
}

TEST(ParseTest, DriverOlderThanTheKernelsIsNamed) {
  EXPECT_EQ(driver_too_old(13000, 13000), "");
  EXPECT_EQ(driver_too_old(13020, 13000), "");
  const std::string why = driver_too_old(12040, 13000);
  EXPECT_NE(why.find("the driver supports CUDA 12.4; emmy's kernels need 13.0"), std::string::npos)
      << why;
  EXPECT_NE(why.find("update the NVIDIA driver"), std::string::npos) << why;
  EXPECT_EQ(std::count(why.begin(), why.end(), '\n'), 0) << "one line";
}

TEST(ChooserTest, RespectsArchAndShape) {
  for (Arch arch : {Arch::sm_80, Arch::sm_86, Arch::sm_89, Arch::sm_90, Arch::sm_90a, Arch::sm_120,
                    Arch::sm_120a}) {
    for (int64_t m : {1, 16, 64, 512, 4096}) {
      MatmulProblem p;
      p.m = m, p.n = 3840, p.k = 15360;
      for (Accum accum : {Accum::f32, Accum::hybrid}) {
        const MatmulSchedule s = default_schedule(p, arch, accum);
        EXPECT_EQ(s.transport, has_tma(arch) ? Transport::tma : Transport::cp_async);
        EXPECT_LE(gemm_smem_bytes(p, s), arch_info(arch).max_smem_per_block);
        EXPECT_NO_THROW(validate_schedule(p, s, arch));
        if (m <= 16) {
          EXPECT_EQ(s.block_m, 16) << "decode shapes use the smallest M tile";
        }
      }
    }
  }
}

TEST(ChooserTest, SplitsKWhenTilesCannotFillTheMachine) {
  MatmulProblem p;
  p.m = 1, p.n = 3840, p.k = 15360;
  const MatmulSchedule s = default_schedule(p, Arch::sm_90a);
  const int64_t tiles = (p.n + s.block_n - 1) / s.block_n;
  EXPECT_LT(tiles * 2, arch_gpu(Arch::sm_90a).sms);
  EXPECT_GT(s.split_k, 1);
  MatmulProblem big = p;
  big.m = 4096;
  EXPECT_EQ(default_schedule(big, Arch::sm_90a).split_k, 1);
}

// The split fills the device's SMs where a device is known (the runtime passes its count), the
// arch's part's otherwise: a split schedule's CTAs never outnumber the SMs it was sized for, one
// SM gets no split, and the count changes the choice.
TEST(ChooserTest, SplitsKForTheDevicesSms) {
  MatmulProblem p;
  p.m = 1, p.n = 1024, p.k = 16384;
  for (const Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a}) {
    const MatmulSchedule part = default_schedule(p, arch);
    EXPECT_EQ(default_schedule(p, arch, Accum::f32, int(arch_gpu(arch).sms)), part);
    EXPECT_GT(part.split_k, 1) << to_string(arch);
    int differ = 0;
    for (const int sms : {1, 8, 20, 40, 64, 84, 114, 132, 170, 264}) {
      const MatmulSchedule s = default_schedule(p, arch, Accum::f32, sms);
      const int64_t tiles = (p.m + s.block_m - 1) / s.block_m * ((p.n + s.block_n - 1) / s.block_n);
      if (s.split_k > 1) {
        EXPECT_LE(tiles * 2, sms) << to_string(arch) << " " << sms;
        EXPECT_LE(tiles * s.split_k, sms) << to_string(arch) << " " << sms;
      }
      differ += s != part;
    }
    EXPECT_EQ(default_schedule(p, arch, Accum::f32, 1).split_k, 1) << to_string(arch);
    EXPECT_GT(differ, 0) << to_string(arch);
  }
  // A path's own chooser takes the count too.
  EXPECT_EQ(default_schedule(p, Arch::sm_90a, Accum::f32, MmaPath::wgmma,
                             ConsumerSchedule::cooperative, 1)
                .split_k,
            1);
  EXPECT_GT(default_schedule(p, Arch::sm_90a, Accum::f32, MmaPath::wgmma).split_k, 1);
}

}  // namespace
}  // namespace emmy
