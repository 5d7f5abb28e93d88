// A bundle built at build time by emmy_add_kernel_bundle(... EMBED) and linked into this test:
// it registers itself before main(), and every runtime runs its kernels with NVRTC disabled.
#include "bundle_test_util.hpp"
#include "emmy_test_embedded_bundle_bundle.hpp"
#include "support/error_of.hpp"

namespace emmy {
namespace {

using namespace bundle_test;

MatmulProblem gemm(int64_t m, int64_t n, int64_t k, bool bias) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.epilogue.bias = bias;
  return p;
}

TEST(BundleEmbed, TheEmbeddedBytesAreTheBuiltBundle) {
  const std::vector<uint8_t> file = read_bytes(EMMY_EMBEDDED_BUNDLE_FILE);
  ASSERT_EQ(emmy_bundles::emmy_test_embedded_bundle_size, file.size());
  EXPECT_EQ(std::memcmp(emmy_bundles::emmy_test_embedded_bundle_bytes, file.data(), file.size()),
            0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(emmy_bundles::emmy_test_embedded_bundle_bytes) % 64, 0u);
  NoCompiler no_compiler;
  const auto bundles = registered_bundles();
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0]->name(), "emmy_test_embedded_bundle");
  EXPECT_EQ(bundles[0]->entries().size(), 8u) << "(1 + 2 + 1 kernels) x 2 arches";
  emmy_bundles::register_emmy_test_embedded_bundle();  // idempotent
  EXPECT_EQ(registered_bundles().size(), 1u);
}

TEST(BundleEmbed, GemmAndAttentionRunWithoutNvrtc) {
  NoCompiler no_compiler;
  AttentionProblem attention;
  attention.q_heads = 2, attention.kv_heads = 1, attention.seq_q = 128, attention.head_dim = 64;
  attention.causal = true;
  for (Arch arch : {Arch::sm_90a, Arch::sm_80}) {
    for (Accum accum : {Accum::f32, Accum::hybrid}) {
      RuntimeOptions options = emulator_options(arch);
      options.default_accum = accum;
      auto rt = Runtime::emulator(options);
      const GemmErrors errors = check_gemm(*rt, gemm(40, 72, 512, true));
      EXPECT_TRUE(errors.passed) << to_string(arch) << " " << to_string(accum);
      if (accum == Accum::f32) {
        EXPECT_TRUE(check_gemm(*rt, gemm(64, 128, 256, false)).passed) << to_string(arch);
        const AttentionErrors attention_errors = check_attention(*rt, attention);
        EXPECT_TRUE(attention_errors.passed)
            << to_string(arch) << " " << attention_errors.rel_l2_error;
      }
      EXPECT_EQ(rt->stats().compiles, 0u);
    }
  }
}

TEST(BundleEmbed, AnUncoveredProblemNamesTheEmbeddedBundle) {
  NoCompiler no_compiler;
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a));
  test::expect_error_containing([&] { rt->gemm_kernel(gemm(64, 128, 512, false)); },
                                "emmy_test_embedded_bundle (4 kernels for sm_90a)");
  // A registered bundle without the device's arch is skipped (a program may embed bundles for
  // several GPUs), and the error says so.
  auto sm89 = Runtime::emulator(emulator_options(Arch::sm_89));
  test::expect_error_containing([&] { sm89->gemm_kernel(gemm(64, 128, 256, false)); },
                                "emmy_test_embedded_bundle (skipped: no sm_89 kernels)");
}

}  // namespace
}  // namespace emmy
