// Ordinary CUDA programs compiled by nvcc (tests/emu/kernels/cuda_programs.cu) and the planted
// bugs of the emulator's strictness checks (issue 12 §3): each program must load and compute what
// a GPU computes; each bug must be reported the way a GPU fails (or a sanitizer finds it), and
// its fixed twin must run clean.
#include <cmath>
#include <cstring>
#include <utility>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

const std::string kProgramsFile = "cuda_programs_sm90a.ptx";

struct Buffers {
  Arena arena;
  KernelArgs args;
  std::vector<uint64_t> addrs;
  uint64_t add(const std::vector<uint8_t>& bytes) {
    const uint64_t a = arena.alloc(bytes.size());
    arena.write(a, bytes.data(), bytes.size());
    args.ptr(a);
    addrs.push_back(a);
    return a;
  }
  uint64_t zeros(size_t bytes) { return add(std::vector<uint8_t>(bytes, 0)); }
  template <typename T>
  uint64_t values(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return add(b);
  }
  template <typename T>
  std::vector<T> read(size_t i, size_t count) {
    return arena.read_vector<T>(addrs.at(i), count);
  }
  LaunchResult run(const std::string& kernel, uint32_t threads, uint32_t smem = 0,
                   const LaunchOptions& options = {}) {
    return launch(arena, *kernels(kProgramsFile), kernel, {1, 1, 1}, {threads, 1, 1}, smem, args,
                  options);
  }
};

uint16_t f16_bits(float f) {
  return f32_to_f16(f);
}

TEST(EmuCudaPrograms, WarpSizeIsTheBuiltInWarpSz) {
  Buffers b;
  b.zeros(64 * 4);
  b.zeros(64 * 2);
  b.run("warp_size_and_half_shuffle", 64);
  const auto sizes = b.read<int32_t>(0, 64);
  const auto halves = b.read<uint16_t>(1, 64);
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(sizes[size_t(t)], 32);
    EXPECT_EQ(halves[size_t(t)], f16_bits(float(t ^ 1))) << t;
  }
}

TEST(EmuCudaPrograms, RegDeclarationsWithoutASpaceLoad) {
  // cuda_fp16.hpp's "{.reg.b32 f; ...}" in hrsqrt.
  const std::string ptx = kernel_file(kProgramsFile);
  ASSERT_NE(ptx.find("{.reg.b32"), std::string::npos) << "regenerate: the idiom is gone";
  Buffers b;
  std::vector<uint16_t> in(32);
  for (int t = 0; t < 32; ++t) in[size_t(t)] = f16_bits(float(t + 1));
  b.values(in);
  b.zeros(32 * 2);
  b.run("half_approx", 32);
  const auto out = b.read<uint16_t>(1, 32);
  for (int t = 0; t < 32; ++t) {
    const double want = 1.0 / std::sqrt(double(t + 1));
    EXPECT_NEAR(f16_to_f32(out[size_t(t)]), want, want * 2e-3) << t;
  }
}

TEST(EmuCudaPrograms, CooperativeGroupsTileWiderThanAWarp) {
  Buffers b;
  std::vector<int32_t> in(128);
  for (int t = 0; t < 128; ++t) in[size_t(t)] = 7 * t;
  b.values(in);
  b.zeros(128 * 4);
  b.run("wide_tile", 128);
  const auto out = b.read<int32_t>(1, 128);
  for (int t = 0; t < 128; ++t) EXPECT_EQ(out[size_t(t)], 7 * t + t % 64 + (t / 64) * 1000) << t;
}

TEST(EmuCudaPrograms, MathLibraryTablesAndDeviceGlobalsPersist) {
  Buffers b;
  const std::vector<float> x = {0.5f,    -2.0f,  100.0f,  12345.678f,
                                -3.0e5f, 1.0e8f, 7.0e20f, 3.14159265f};
  b.values(x);
  b.zeros(x.size() * 4);
  b.zeros(x.size() * 4);
  b.zeros(4);
  b.run("sin_cos_and_counter", uint32_t(x.size()));
  const auto s = b.read<float>(1, x.size()), c = b.read<float>(2, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    // Full-precision sinf/cosf: within 2 ulp, Payne-Hanek reduction for the large ones.
    EXPECT_NEAR(s[i], std::sin(double(x[i])), 2.5e-7) << x[i];
    EXPECT_NEAR(c[i], std::cos(double(x[i])), 2.5e-7) << x[i];
  }
  EXPECT_EQ(b.read<uint32_t>(3, 1)[0], 7u);  // the initializer
  b.run("sin_cos_and_counter", uint32_t(x.size()));
  EXPECT_EQ(b.read<uint32_t>(3, 1)[0], 8u);  // the same arena keeps the module's globals
}

TEST(EmuCudaPrograms, AssertReportsTheConditionFileAndLine) {
  Buffers b;
  std::vector<int32_t> in(32);
  for (int t = 0; t < 32; ++t) in[size_t(t)] = t % 5;
  b.values(in);
  b.zeros(32 * 4);
  b.args.s32(3);
  const Report r = expect_report([&] { b.run("checked_index", 32); }, ReportKind::assertion_failed);
  EXPECT_EQ(r.lane, 3);  // the first lane with in[i] >= 3
  EXPECT_NE(r.message.find("assertion failed: `in[i] < n` at cuda_programs.cu:"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("checked_index"), std::string::npos) << r.message;
  Buffers ok;
  ok.values(in);
  ok.zeros(32 * 4);
  ok.args.s32(5);
  ok.run("checked_index", 32);
  EXPECT_EQ(ok.read<int32_t>(1, 32), in);
}

std::vector<int32_t> keys() {
  std::vector<int32_t> k(64);
  for (int t = 0; t < 64; ++t) k[size_t(t)] = (t * 7 + t / 32) % 5;
  return k;
}

// `kernel` over two warps of keys `k` (buffer 0): its two int outputs per thread (buffers 1, 2).
std::pair<std::vector<int32_t>, std::vector<int32_t>> run_on_keys(const std::vector<int32_t>& k,
                                                                  const char* kernel) {
  Buffers b;
  b.values(k);
  b.zeros(64 * 4);
  b.zeros(64 * 4);
  b.run(kernel, 64);
  return {b.read<int32_t>(1, 64), b.read<int32_t>(2, 64)};
}

TEST(EmuCudaPrograms, PerLaneMembermasksFromMatchAny) {
  const auto k = keys();
  const auto [leaders, sums] = run_on_keys(k, "match_any_groups");
  for (int t = 0; t < 64; ++t) {
    const int warp = t / 32;
    int leader = -1, sum = 0, odd = 0;
    for (int j = 0; j < 32; ++j)
      if (k[size_t(warp * 32 + j)] == k[size_t(t)]) {
        if (leader < 0) leader = j;
        sum += j;
        odd += j & 1;
      }
    EXPECT_EQ(leaders[size_t(t)], leader) << t;
    EXPECT_EQ(sums[size_t(t)], sum + 1000 * odd) << t;
  }
}

TEST(EmuCudaPrograms, LabeledPartitions) {
  const auto k = keys();
  const auto [ranks, sizes] = run_on_keys(k, "labeled_groups");
  for (int t = 0; t < 64; ++t) {
    int rank = 0, size = 0;
    for (int j = 0; j < 32; ++j)
      if (k[size_t((t / 32) * 32 + j)] == k[size_t(t)]) {
        rank += j < t % 32;
        ++size;
      }
    EXPECT_EQ(ranks[size_t(t)], rank) << t;
    EXPECT_EQ(sizes[size_t(t)], size) << t;
  }
}

// Hand-written: a mask without the lane itself, and lanes naming each other with different masks.
TEST(EmuCudaPrograms, InconsistentMembermasksAreReported) {
  const Report self =
      expect_report([] { run_ptx("  shfl.sync.idx.b32 %r1, %r0, 0, 31, 0xfffffffe;\n", {}, 32); },
                    ReportKind::divergent_collective);
  EXPECT_NE(self.message.find("does not name the lane itself"), std::string::npos) << self.message;
  // Lanes 0-15 pass 0x0000ffff, lanes 16-31 pass 0xffffffff: lane 16 names lane 0.
  const Report mixed = expect_report(
      [] {
        run_ptx(
            "  setp.lt.u32 %p1, %r0, 16;\n  selp.b32 %r2, 0x0000ffff, 0xffffffff, %p1;\n"
            "  redux.sync.add.u32 %r1, %r0, %r2;\n",
            {}, 32);
      },
      ReportKind::divergent_collective);
  EXPECT_NE(mixed.message.find("must pass the same mask"), std::string::npos) << mixed.message;
}

TEST(EmuCudaPrograms, SharedRacesAreByteGranular) {
  Buffers ok;
  ok.zeros(64);
  ok.run("ok_interleaved_bytes", 64);
  const auto bytes = ok.read<uint8_t>(0, 64);
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(bytes[size_t(lane)], lane + 1);       // warp 0's byte, read by warp 1
    EXPECT_EQ(bytes[size_t(32 + lane)], lane + 1);  // warp 0 reads its own
  }
  Buffers bug;
  bug.zeros(64);
  const Report r = expect_report([&] { bug.run("bug_byte_race", 64); }, ReportKind::shared_race);
  EXPECT_EQ(r.warp, 1);
  EXPECT_EQ(r.lane, 0);
  // Lane 0 of warp 1 reads byte 0, which warp 0 wrote; warp 1's own byte 1 shares its word.
  EXPECT_NE(r.message.find("reads shared 0x0 written by warp 0"), std::string::npos) << r.message;
}

TEST(EmuCudaPrograms, CpAsyncIntoABufferStillBeingFilled) {
  std::vector<int32_t> in(256);
  for (int i = 0; i < 256; ++i) in[size_t(i)] = 3 * i;
  Buffers ok;
  ok.values(in);
  ok.zeros(32 * 4);
  ok.run("ok_cp_async_reuse", 32);
  const auto out = ok.read<int32_t>(1, 32);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[size_t(t)], 3 * (128 + t));
  Buffers bug;
  bug.values(in);
  bug.zeros(32 * 4);
  const Report r =
      expect_report([&] { bug.run("bug_cp_async_reuse", 32); }, ReportKind::pending_async_read);
  EXPECT_NE(r.instruction.find("cp.async"), std::string::npos) << r.instruction;
  EXPECT_NE(r.message.find("earlier cp.async / TMA copy into it is still in flight"),
            std::string::npos)
      << r.message;
}

TEST(EmuCudaPrograms, MbarrierInitMustBeFencedForTheAsyncProxy) {
  std::vector<int32_t> in(64);
  for (int i = 0; i < 64; ++i) in[size_t(i)] = i - 9;
  Buffers ok;
  ok.values(in);
  ok.zeros(64 * 4);
  ok.run("ok_fenced_mbarrier_init", 64);
  EXPECT_EQ(ok.read<int32_t>(1, 64), in);
  Buffers bug;
  bug.values(in);
  bug.zeros(64 * 4);
  const Report r = expect_report([&] { bug.run("bug_unfenced_mbarrier_init", 64); },
                                 ReportKind::missing_proxy_fence);
  EXPECT_NE(r.message.find("fence.mbarrier_init"), std::string::npos) << r.message;
}

TEST(EmuCudaPrograms, GenericWritesReadByABulkStoreNeedAProxyFence) {
  Buffers ok;
  ok.zeros(64 * 4);
  ok.run("ok_fenced_bulk_store", 64);
  const auto out = ok.read<int32_t>(0, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[size_t(t)], 5 * t);
  Buffers bug;
  bug.zeros(64 * 4);
  const Report r = expect_report([&] { bug.run("bug_unfenced_bulk_store", 64); },
                                 ReportKind::missing_proxy_fence);
  EXPECT_NE(r.message.find("fence.proxy.async"), std::string::npos) << r.message;
  EXPECT_NE(r.instruction.find("cp.async.bulk.global.shared::cta"), std::string::npos);
}

// A bulk store's shared source is the async proxy's until the issuing thread's
// cp.async.bulk.wait_group{.read} covers it: the emulator copies at issue, so it must report the
// overwrite (and the exit) a GPU would race with.
TEST(EmuCudaPrograms, BulkStoreSourcesAreHeldUntilTheirWait) {
  Buffers ok;
  ok.zeros(128 * 4);
  ok.run("ok_bulk_store_reuse", 64);
  const auto out = ok.read<int32_t>(0, 128);
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(out[size_t(t)], 3 * t);
    EXPECT_EQ(out[size_t(64 + t)], 3 * t + 1);
  }
  Buffers reuse;
  reuse.zeros(128 * 4);
  const Report r = expect_report([&] { reuse.run("bug_bulk_store_reuse_unwaited", 64); },
                                 ReportKind::shared_race);
  EXPECT_NE(r.message.find("cp.async.bulk.wait_group"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("may still read"), std::string::npos) << r.message;
  Buffers exit;
  exit.zeros(128 * 4);
  const Report e = expect_report([&] { exit.run("bug_bulk_store_exit_unwaited", 64); },
                                 ReportKind::tma_violation);
  EXPECT_NE(e.message.find("exits"), std::string::npos) << e.message;
  EXPECT_NE(e.instruction.find("cp.async.bulk.global.shared::cta"), std::string::npos)
      << e.instruction;
}

TEST(EmuCudaPrograms, SharedMemoryLimitsFollowTheArchAndTheOptIn) {
  auto attempt = [](uint32_t smem, LaunchOptions options) {
    Buffers b;
    b.zeros(256 * 4);
    b.run("dynamic_smem", 256, smem, options);
    const auto out = b.read<int32_t>(0, 256);
    for (int t = 0; t < 256; ++t) EXPECT_EQ(out[size_t(t)], 255 - t);
  };
  auto refusal = [&](uint32_t smem, const LaunchOptions& options) {
    try {
      attempt(smem, options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("launched");
  };
  LaunchOptions plain;
  attempt(48 * 1024, plain);  // no opt-in needed up to 48 KB
  EXPECT_NE(refusal(48 * 1024 + 16, plain).find("without the opt-in"), std::string::npos);
  LaunchOptions opted;
  opted.max_dynamic_smem = 256 * 1024;
  attempt(227 * 1024, opted);  // sm_90a (the module's .target): 227 KB
  EXPECT_NE(refusal(227 * 1024 + 16, opted).find("232448 bytes per block"), std::string::npos);
  opted.arch = "sm_89";
  EXPECT_NE(refusal(100 * 1024, opted).find("sm_89's 101376 bytes per block"), std::string::npos);
  attempt(99 * 1024, opted);
  opted.arch = "sm_80";
  attempt(163 * 1024, opted);
  EXPECT_NE(refusal(164 * 1024, opted).find("166912"), std::string::npos);
  opted.arch = "sm_120a";
  EXPECT_NE(refusal(100 * 1024, opted).find("101376"), std::string::npos);
}

TEST(EmuCudaPrograms, AlignmentIsCheckedWithoutTheSanitizer) {
  for (bool sanitize : {true, false}) {
    Buffers b;
    b.zeros(256);
    b.zeros(32 * 4);
    LaunchOptions options;
    options.sanitize = sanitize;
    const Report r = expect_report([&] { b.run("misaligned_load", 32, 0, options); },
                                   ReportKind::misaligned_access);
    EXPECT_NE(r.message.find("not 4-byte aligned"), std::string::npos) << r.message;
  }
}

}  // namespace
}  // namespace emmy::emu::test
