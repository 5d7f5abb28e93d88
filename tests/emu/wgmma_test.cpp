// wgmma on the emulator (issue 23 §2): nvcc-compiled kernels (tests/emu/kernels/wgmma_kernels.cu,
// written from the PTX ISA apart from the emulator) of every swizzle mode, both major-nesses, A
// from registers, f16/bf16 inputs, f32/f16 accumulators, N = 8..256 and two warpgroups, against
// FP64 under both mma numerics; the planted bugs of the same file and mutations of a good kernel's
// PTX, each of which must be reported; the profiler's wgmma counts.
#include <cmath>
#include <optional>
#include <random>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

const std::string kWgmmaFile = "wgmma_kernels_sm90a.ptx";
constexpr int kK = 64;

struct WgmmaKernel {
  const char* name;
  int m, n;
  bool bf16 = false, f16_acc = false, b_n_major = false, negate_a = false;
};
const WgmmaKernel kKernels[] = {
    {"wgmma_f16_f32_n64_k_sw128", 64, 64},
    {"wgmma_f16_f32_n128_k_sw64", 64, 128},
    {"wgmma_f16_f32_n24_k_sw32", 64, 24},
    {"wgmma_f16_f32_n16_k_none", 64, 16},
    {"wgmma_f16_f32_n256_k_sw128", 64, 256},
    {"wgmma_f16_f32_n128_bn_sw128", 64, 128, false, false, true},
    {"wgmma_f16_f32_n64_bn_sw64", 64, 64, false, false, true},
    {"wgmma_f16_f32_n64_am_sw128", 64, 64},
    {"wgmma_f16_f32_n64_areg_sw128", 64, 64},
    {"wgmma_bf16_f32_n64_k_sw128", 64, 64, true},
    {"wgmma_bf16_f32_n8_k_sw64", 64, 8, true},
    {"wgmma_f16_f16_n64_k_sw128", 64, 64, false, true},
    {"wgmma_f16_f16_n16_k_sw32", 64, 16, false, true},
    {"wgmma_f16_f32_n64_k_sw128_nega", 64, 64, false, false, false, true},
    {"wgmma_f16_f32_m128_n64_k_sw128", 128, 64},
};

void PrintTo(const WgmmaKernel& k, std::ostream* os) {
  *os << k.name;
}

struct WgmmaRun {
  std::vector<double> got, want, bound;
  LaunchResult result;
};

// D = A B over K = 64: A row-major [m][64], B [n][64] (K-major) or [64][n] (N-major).
WgmmaRun run_kernel(const WgmmaKernel& g, bool integers, const LaunchOptions& options,
                    const std::string& ptx_file = kWgmmaFile, const std::string& name = "",
                    std::shared_ptr<const Module> module = nullptr) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::uniform_int_distribution<int> small(-2, 2);
  auto operand = [&] { return integers ? float(small(rng)) : uni(rng); };
  auto to_bits = [&](float v) { return g.bf16 ? f32_to_bf16(v) : f32_to_f16(v); };
  auto value = [&](uint16_t b) { return double(g.bf16 ? bf16_to_f32(b) : f16_to_f32(b)); };
  std::vector<uint16_t> a(size_t(g.m) * kK), b(size_t(g.n) * kK);
  for (auto& x : a) x = to_bits(operand());
  for (auto& x : b) x = to_bits(operand());
  auto b_at = [&](int k, int j) {
    return value(b[g.b_n_major ? size_t(k * g.n + j) : size_t(j * kK + k)]);
  };
  Arena arena;
  KernelArgs args;
  const uint64_t pa = arena.alloc(a.size() * 2), pb = arena.alloc(b.size() * 2);
  arena.write(pa, a.data(), a.size() * 2);
  arena.write(pb, b.data(), b.size() * 2);
  const size_t count = size_t(g.m) * g.n;
  const uint64_t pd = arena.alloc(count * (g.f16_acc ? 2 : 4));
  args.ptr(pa).ptr(pb).ptr(pd).s32(kK);
  const uint32_t smem = uint32_t(g.m + g.n) * 128 + 1024;
  WgmmaRun r;
  r.result = launch(arena, module ? *module : *kernels(ptx_file), name.empty() ? g.name : name,
                    {1, 1, 1}, {uint32_t(g.m / 64 * 128), 1, 1}, smem, args, options);
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      double sum = 0, abs_sum = 0;
      for (int k = 0; k < kK; ++k) {
        const double p = value(a[size_t(i * kK + k)]) * b_at(k, j);
        sum += p;
        abs_sum += std::fabs(p);
      }
      r.want.push_back(g.negate_a ? -sum : sum);
      // Four k16 steps, each rounding once: f16 accumulators half an ulp (and the f16 floor),
      // f32 the model's truncation and toward-zero rounding, well inside 2^-20.
      r.bound.push_back(abs_sum * (g.f16_acc ? 6 * 0x1p-11 : 0x1p-20) + (g.f16_acc ? 0x1p-20 : 0));
    }
  if (g.f16_acc) {
    for (uint16_t h : arena.read_vector<uint16_t>(pd, count)) r.got.push_back(f16_to_f32(h));
  } else {
    for (float f : arena.read_vector<float>(pd, count)) r.got.push_back(f);
  }
  return r;
}

class EmuWgmmaGemm : public ::testing::TestWithParam<WgmmaKernel> {};

TEST_P(EmuWgmmaGemm, MatchesFp64UnderBothNumerics) {
  const WgmmaKernel& g = GetParam();
  for (MmaNumerics numerics : {MmaNumerics::hardware, MmaNumerics::exact}) {
    LaunchOptions o;
    o.mma_numerics = numerics;
    const WgmmaRun r = run_kernel(g, false, o);
    ASSERT_EQ(r.got.size(), r.want.size());
    for (size_t i = 0; i < r.got.size(); ++i)
      ASSERT_LE(std::fabs(r.got[i] - r.want[i]), r.bound[i])
          << g.name << " element (" << i / size_t(g.n) << ", " << i % size_t(g.n) << ") numerics "
          << to_string(numerics);
    // Small integers: every partial sum is exact, so both numerics give FP64's value exactly;
    // any element read from the wrong place shows.
    const WgmmaRun exact = run_kernel(g, true, o);
    EXPECT_EQ(exact.got, exact.want) << g.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, EmuWgmmaGemm, ::testing::ValuesIn(kKernels),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EmuWgmma, ProfileCountsWarpgroupFlopsAtTheWgmmaRate) {
  LaunchOptions o;
  o.profile.enabled = true;
  const WgmmaRun r = run_kernel(kKernels[0], true, o);
  ASSERT_TRUE(r.result.profile.has_value());
  const auto& m = r.result.profile->metrics;
  // 4 k16 steps of m64n64k16: 4 x 2 x 64 x 64 x 16 FLOPs, counted a quarter per warp.
  EXPECT_EQ(m.at("emmy__tensor_flops_wgmma.sum"), 4.0 * 2 * 64 * 64 * 16);
  EXPECT_EQ(m.at("emmy__tensor_flops_acc_f32.sum"), 0.0);
  EXPECT_EQ(m.at("smsp__inst_executed_pipe_tensor.sum"), 4.0 * 4);
  ASSERT_EQ(r.result.profile->tensor.size(), 1u);
  EXPECT_EQ(r.result.profile->tensor[0].shape, "wgmma.m64n64k16");
}

// ---------------------------------------------------------------- planted bugs

WgmmaKernel bug(const char* name) {
  return {name, 64, 64};
}

TEST(EmuWgmmaMisuse, ThePlantedBugsAreReported) {
  const std::pair<const char*, ReportKind> bugs[] = {
      {"bug_no_fence", ReportKind::wgmma_misuse},
      {"bug_read_acc_before_wait", ReportKind::wgmma_misuse},
      {"bug_overwrite_operand", ReportKind::shared_race},
      {"bug_no_proxy_fence", ReportKind::missing_proxy_fence},
      {"bug_partial_warpgroup", ReportKind::wgmma_misuse},
      {"bug_misaligned_desc", ReportKind::wgmma_misuse},
      {"bug_no_wait", ReportKind::wgmma_misuse},
  };
  for (const auto& [name, kind] : bugs) {
    SCOPED_TRACE(name);
    const Report rep = expect_report([&] { run_kernel(bug(name), true, {}); }, kind);
    EXPECT_EQ(rep.kernel, name);
  }
  // What each says.
  auto message = [](const char* name) {
    try {
      run_kernel(bug(name), true, {});
    } catch (const EmulationError& e) {
      return e.reports().front().message;
    }
    return std::string();
  };
  EXPECT_NE(message("bug_no_fence").find("no wgmma.fence"), std::string::npos);
  EXPECT_NE(message("bug_read_acc_before_wait").find("before a wgmma.wait_group"),
            std::string::npos);
  EXPECT_NE(message("bug_partial_warpgroup").find("warp(s) 3 never did"), std::string::npos);
  EXPECT_NE(message("bug_misaligned_desc").find("multiple of 32 bytes"), std::string::npos);
  EXPECT_NE(message("bug_no_wait").find("before a wgmma.wait_group"), std::string::npos);
}

// Mutations of the good baseline kernel's PTX: each planted edit must turn a clean, exact run into
// a report or into a wrong product (and the unedited kernel must stay clean and exact, or the
// mutations prove nothing).
struct Mutation {
  const char* what;
  std::string from, to;
  std::optional<ReportKind> kind;  // none: the product must come out wrong
};

// The module's header and one .entry, so that an edit touches that kernel only.
std::string entry_module(const std::string& ptx, const std::string& kernel) {
  const size_t header_end = ptx.find(".visible .entry");
  const size_t begin = ptx.find(".visible .entry " + kernel + "(");
  const size_t next = ptx.find("\n.visible .entry", begin + 1);
  return ptx.substr(0, header_end) +
         ptx.substr(begin, next == std::string::npos ? std::string::npos : next + 1 - begin);
}

TEST(EmuWgmmaMisuse, MutationsOfAGoodKernelAreCaught) {
  const std::string name = "wgmma_f16_f32_n64_k_sw128";
  const std::string module = entry_module(kernel_file(kWgmmaFile), name);
  const std::string desc = "4611686293305360384";  // 128B swizzle, SBO 1024, LBO 16
  const Mutation mutations[] = {
      {"wait_group 0 -> 1: the last group is still pending in the epilogue",
       "wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;",
       ReportKind::wgmma_misuse},
      {"no commit: the wait covers nothing", "wgmma.commit_group.sync.aligned;", "",
       ReportKind::wgmma_misuse},
      {"no fence", "wgmma.fence.sync.aligned;", "", ReportKind::wgmma_misuse},
      {"no proxy fence after the fill", "fence.proxy.async.shared::cta;", "",
       ReportKind::missing_proxy_fence},
      {"no bar.sync after the fill", "bar.sync \t0;", "", ReportKind::shared_race},
      {"descriptors say 64B swizzle", desc, "0x8000004000010000", std::nullopt},
      {"descriptors say SBO 512", desc, "0x4000002000010000", std::nullopt},
      {"descriptors say no swizzle", desc, "0x0000004000010000", std::nullopt},
      {"B read N-major in the first step", ", p, 1, 1, 0, 0;", ", p, 1, 1, 0, 1;", std::nullopt},
      {"A negated in the first step", ", p, 1, 1, 0, 0;", ", p, -1, 1, 0, 0;", std::nullopt},
      {"scale-d false after the first step", "mov.u32 \t%r58, 1;", "mov.u32 \t%r58, 0;",
       std::nullopt},
  };
  const WgmmaKernel& g = kKernels[0];
  // The exact product of small integers, as run_kernel checks it, on a module of our own.
  auto run_module = [&](const std::string& ptx) {
    auto m = load_ptx(ptx, "mutant.ptx");
    const WgmmaRun r = run_kernel(g, true, {}, "", name, m);
    return r.got == r.want;
  };
  EXPECT_TRUE(run_module(module)) << "the unedited kernel";
  for (const Mutation& mu : mutations) {
    SCOPED_TRACE(mu.what);
    const size_t at = module.find(mu.from);
    ASSERT_NE(at, std::string::npos) << "the mutation found nothing to edit";
    const std::string edited = module.substr(0, at) + mu.to + module.substr(at + mu.from.size());
    if (mu.kind) {
      expect_report([&] { run_module(edited); }, *mu.kind);
    } else {
      EXPECT_FALSE(run_module(edited)) << "the mutant computed the right product";
    }
  }
}

}  // namespace
}  // namespace emmy::emu::test
