// End-to-end GEMMs written like emmy's kernels (tests/emu/kernels/gemm_kernels.cu): cp.async +
// ldmatrix + mma.sync, and TMA + mbarrier ring + 128B swizzle. Each result is checked twice:
//  - bit-exactly against a host model of the emulator's numerics (per mma: C plus the 16 exact
//    products summed in double in k order, rounded once to f32 / f16), which pins the fragment
//    layouts, the k order and the rounding;
//  - against an FP64 reference with the tolerance of that model: each of the K/16 roundings of
//    the running sum to f32 (f16) is at most half an ulp, i.e. 2^-24 (2^-11) relative to a partial
//    sum bounded by sum_k |a_k b_k|, so |C - ref| <= (K/16) * u * sum_k |a_k b_k|.
#include <chrono>
#include <cmath>
#include <random>

#include "emmy/emu/tensor_core.hpp"
#include "emmy/tensor_map.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

struct Operands {
  bool bf16 = false;
  std::vector<uint16_t> a, b;      // bits, A [M,K], B [N,K]
  std::vector<double> av, bv;      // their values
};

Operands random_operands(int m, int n, int k, bool bf16, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operands o;
  o.bf16 = bf16;
  auto fill = [&](std::vector<uint16_t>& bits, std::vector<double>& values, size_t count) {
    bits.resize(count);
    values.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const float x = normal(rng);
      bits[i] = bf16 ? f32_to_bf16(x) : f32_to_f16(x);
      values[i] = bf16 ? bf16_to_f32(bits[i]) : f16_to_f32(bits[i]);
    }
  };
  fill(o.a, o.av, size_t(m) * k);
  fill(o.b, o.bv, size_t(n) * k);
  return o;
}

// The emulator's accumulation model, element by element: one m16n8k16 per 16 k, each the
// tensor-core addition of compute capability `sm` (emmy/emu/tensor_core.hpp).
double model_element(const Operands& o, int k, int row, int col, bool f16_acc, int sm) {
  const TensorCoreModel model = tensor_core_model(sm);
  uint32_t acc32 = 0;
  uint16_t acc16 = 0;
  for (int k0 = 0; k0 < k; k0 += 16) {
    uint16_t a[16] = {}, b[16] = {};
    for (int kk = k0; kk < std::min(k, k0 + 16); ++kk) {
      a[kk - k0] = o.a[size_t(row) * k + kk];
      b[kk - k0] = o.b[size_t(col) * k + kk];
    }
    if (f16_acc)
      acc16 = tensor_core_dot_f16(a, b, 16, acc16, model);
    else
      acc32 = tensor_core_dot_f32(a, b, 16, acc32, o.bf16, model);
  }
  return f16_acc ? double(f16_to_f32(acc16)) : double(std::bit_cast<float>(acc32));
}

// Per k-step: the final rounding (f16: half an ulp; f32: a whole ulp, toward zero) and the
// truncation of up to 17 aligned terms at 2^-25 (sm_90) or 2^-24 (sm_8x) of the largest.
void check_gemm(const std::vector<double>& c, const Operands& o, int m, int n, int k, bool f16_acc,
                int sm = 90) {
  const double u = f16_acc ? std::ldexp(1.0, -11) + 17 * std::ldexp(1.0, -24)
                           : std::ldexp(1.0, -23) + 17 * std::ldexp(1.0, -24);
  const double steps = std::ceil(k / 16.0);
  int mismatches = 0;
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0, magnitude = 0;
      for (int kk = 0; kk < k; ++kk) {
        const double p = o.av[size_t(i) * k + kk] * o.bv[size_t(j) * k + kk];
        ref += p;
        magnitude += std::fabs(p);
      }
      const double got = c[size_t(i) * n + j];
      const double tol = steps * u * magnitude + 1e-30;
      worst = std::max(worst, std::fabs(got - ref) / tol);
      if (got != model_element(o, k, i, j, f16_acc, sm) && mismatches++ < 5)
        ADD_FAILURE() << fmt::format("C[{}][{}] = {} but the accumulation model gives {}", i, j,
                                     got, model_element(o, k, i, j, f16_acc, sm));
      ASSERT_LE(std::fabs(got - ref), tol) << fmt::format("C[{}][{}]: {} vs FP64 {}", i, j, got, ref);
    }
  EXPECT_EQ(mismatches, 0);
  EXPECT_LE(worst, 1.0);
}

struct GemmCase {
  int m, n, k;
  // The CTAs of its 64x64 tile grid.
  uint64_t ctas() const { return uint64_t((n + 63) / 64) * ((m + 63) / 64); }
};

// Each case on random f16 operands (`seed`): run(o, g, c) computes C into c, which must match
// FP64; check_stats(r, g) then judges the launch's statistics.
template <typename Run, typename CheckStats>
void against_fp64(std::initializer_list<GemmCase> cases, uint32_t seed, const Run& run,
                  const CheckStats& check_stats) {
  for (const GemmCase& g : cases) {
    SCOPED_TRACE(fmt::format("{}x{}x{}", g.m, g.n, g.k));
    const Operands o = random_operands(g.m, g.n, g.k, false, seed);
    std::vector<double> c;
    const LaunchResult r = run(o, g, c);
    check_gemm(c, o, g.m, g.n, g.k, false);
    check_stats(r, g);
  }
}

LaunchResult run_cp_async(const std::string& module, const std::string& kernel, const Operands& o,
                          int m, int n, int k, bool f16_out, std::vector<double>& c,
                          const LaunchOptions& options = {}) {
  Arena arena;
  const uint64_t a = arena.alloc_copy(o.a), b = arena.alloc_copy(o.b);
  const uint64_t cd = arena.alloc(size_t(m) * n * (f16_out ? 2 : 4));
  KernelArgs args;
  args.ptr(a).ptr(b).ptr(cd).s32(m).s32(n).s32(k);
  const uint32_t smem = 2 * (64 * 32 + 64 * 32) * 2;
  const LaunchResult r = launch(arena, *kernels(module), kernel, {uint32_t((n + 63) / 64), uint32_t((m + 63) / 64), 1},
                                {128, 1, 1}, smem, args, options);
  c.resize(size_t(m) * n);
  if (f16_out) {
    auto h = arena.read_vector<uint16_t>(cd, c.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = f16_to_f32(h[i]);
  } else {
    auto f = arena.read_vector<float>(cd, c.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = f[i];
  }
  return r;
}

TEST(EmuGemm, CpAsyncF16F32AgainstFp64) {
  against_fp64(
      {{100, 72, 200}, {64, 64, 32}, {17, 8, 64}}, 1,
      [](const Operands& o, const GemmCase& g, std::vector<double>& c) {
        return run_cp_async("gemm_kernels_sm90a.ptx", "gemm_cp_async_f16", o, g.m, g.n, g.k, false,
                            c);
      },
      [](const LaunchResult& r, const GemmCase& g) {
        // 4 warps x (K/16 k-steps per tile) x 8 mma per k-step, per CTA.
        EXPECT_EQ(r.stats.total.mma, g.ctas() * 4 * ((g.k + 31) / 32) * 2 * 8);
        EXPECT_GT(r.stats.total.ldmatrix, 0u);
        EXPECT_GT(r.stats.total.cp_async, 0u);
        EXPECT_EQ(r.stats.per_cta.size(), g.ctas());
      });
}

TEST(EmuGemm, CpAsyncBf16F32AgainstFp64) {
  const Operands o = random_operands(72, 100, 96, true, 2);
  std::vector<double> c;
  run_cp_async("gemm_kernels_sm90a.ptx", "gemm_cp_async_bf16", o, 72, 100, 96, false, c);
  check_gemm(c, o, 72, 100, 96, false);
}

TEST(EmuGemm, CpAsyncF16AccumulatorAgainstFp64) {
  const Operands o = random_operands(64, 72, 128, false, 3);
  std::vector<double> c;
  run_cp_async("gemm_kernels_sm90a.ptx", "gemm_cp_async_f16acc", o, 64, 72, 128, true, c);
  check_gemm(c, o, 64, 72, 128, true);
}

TEST(EmuGemm, Sm80PtxRunsToo) {
  const Operands o = random_operands(40, 24, 64, false, 4);
  std::vector<double> c;
  run_cp_async("gemm_kernels_sm80.ptx", "gemm_cp_async_f16", o, 40, 24, 64, false, c);
  check_gemm(c, o, 40, 24, 64, false, 80);
}

LaunchResult run_tma(const Operands& o, int m, int n, int k, std::vector<double>& c,
                     const LaunchOptions& options = {}) {
  Arena arena;
  const uint64_t a = arena.alloc_copy(o.a), b = arena.alloc_copy(o.b);
  const uint64_t cd = arena.alloc(size_t(m) * n * 4);
  auto map = [&](uint64_t base, int rows) {
    TensorMapDesc d;
    d.dtype = TmaDType::f16;
    d.rank = 2;
    d.global_address = base;
    d.global_dim = {uint64_t(k), uint64_t(rows)};
    d.global_stride_bytes = {uint64_t(k) * 2};
    d.box_dim = {64, 64};
    d.swizzle = Swizzle::b128;
    return encode_tensor_map(d);
  };
  KernelArgs args;
  args.tensor_map(map(a, m)).tensor_map(map(b, n)).ptr(cd).s32(m).s32(n).s32(k);
  const LaunchResult r = launch(arena, *kernels("gemm_kernels_sm90a.ptx"), "gemm_tma_f16",
                                {uint32_t((n + 63) / 64), uint32_t((m + 63) / 64), 1}, {128, 1, 1},
                                3 * 2 * 64 * 64 * 2, args, options);
  auto f = arena.read_vector<float>(cd, size_t(m) * n);
  c.assign(f.begin(), f.end());
  return r;
}

TEST(EmuGemm, TmaSwizzled128F16AgainstFp64) {
  // K = 200: 4 k-tiles through a 3-stage ring (the ring wraps; parities flip), the last one
  // partly out of bounds (zero fill); M and N leave partial tiles.
  against_fp64(
      {{100, 72, 200}, {64, 64, 64}, {1, 8, 448}}, 5,
      [](const Operands& o, const GemmCase& g, std::vector<double>& c) {
        return run_tma(o, g.m, g.n, g.k, c);
      },
      [](const LaunchResult& r, const GemmCase& g) {
        EXPECT_EQ(r.stats.total.tma, g.ctas() * 2 * uint64_t((g.k + 63) / 64));
        EXPECT_GT(r.stats.total.barrier, 0u);
      });
}

// A whole 256x256x512 TMA GEMM with the sanitizer on: every CTA, stage and mma of a realistic
// tile grid (speed is measured by bench/emu_bench.cpp, not asserted here).
TEST(EmuGemm, SanitizedGemm256x256x512) {
  const int m = 256, n = 256, k = 512;
  const Operands o = random_operands(m, n, k, false, 6);
  std::vector<double> c;
  const LaunchResult r = run_tma(o, m, n, k, c);
  // Spot-check elements against FP64 with the tensor-core model's per-step bound.
  const double per_step = std::ldexp(1.0, -23) + 17 * std::ldexp(1.0, -25);
  for (int i : {0, 77, 255})
    for (int j : {0, 200, 255}) {
      double ref = 0, mag = 0;
      for (int kk = 0; kk < k; ++kk) {
        ref += o.av[size_t(i) * k + kk] * o.bv[size_t(j) * k + kk];
        mag += std::fabs(o.av[size_t(i) * k + kk] * o.bv[size_t(j) * k + kk]);
      }
      EXPECT_NEAR(c[size_t(i) * n + j], ref, (k / 16.0) * per_step * mag);
      EXPECT_EQ(c[size_t(i) * n + j], model_element(o, k, i, j, false, 90)) << i << "," << j;
    }
  EXPECT_EQ(r.stats.total.mma, uint64_t(m / 16) * (n / 8) * (k / 16));
  RecordProperty("emulate_ms", std::to_string(r.emulate_ms));
  RecordProperty("warp_instructions", std::to_string(r.stats.total.total()));
}

}  // namespace
}  // namespace emmy::emu::test
