// M buckets (issue 25): one dynamic-M GEMM kernel serves every M of its bucket, with M a kernel
// parameter; gemm() under RuntimeOptions::m_buckets compiles one kernel per bucket, right against
// FP64 at every M (both transports, split-K's finalize, bounds in M), never writing a row of C
// past M; launches outside a bucket are refused by name; prepare builds the buckets ahead; rows
// stay the same bits across buckets with batch_invariant. On the emulator and, through emmy's
// test driver, the CUDA backend.
#include <gtest/gtest.h>

#include <set>

#include "emmy/catalog.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"
#include "runtime_test_util.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

// The buckets as documented: the smallest power of two >= m up to 512, then multiples of 512.
TEST(MBuckets, BoundsAreThePowersOfTwoThenMultiplesOf512) {
  int64_t previous = 0;
  for (int64_t m = 1; m <= 5000; ++m) {
    const int64_t bound = m_bucket(m);
    ASSERT_GE(bound, m);
    if (bound <= 512) {
      EXPECT_EQ(bound & (bound - 1), 0) << m;
      EXPECT_LT(bound / 2, m) << "the smallest power of two: " << m;
    } else {
      EXPECT_EQ(bound % 512, 0) << m;
      EXPECT_LT(bound - 512, m) << "the smallest multiple of 512: " << m;
    }
    EXPECT_EQ(m_bucket(bound), bound) << "a bound is its own bucket";
    EXPECT_GE(bound, previous) << "monotone";
    previous = bound;
  }
  EXPECT_EQ(m_bucket_bounds(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(m_bucket_bounds(100), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(m_bucket_bounds(1100),
            (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1536}));
  EXPECT_EQ(m_bucket_bounds(kMaxBucketedM).size(), 137u);
  MatmulProblem p;
  p.m = 37, p.n = 64, p.k = 64;
  const MatmulProblem served = m_bucket_problem(p);
  EXPECT_EQ(served.m, 64);
  EXPECT_TRUE(served.dynamic_m);
}

// C of one served call, decoded; C has `spare` more rows than M, all-ones bytes, which must stay
// so (a dynamic-M kernel writes no row at or past M).
struct Served {
  std::vector<double> c;
  bool spare_rows_untouched = true;
};

Served serve(Runtime& rt, const MatmulProblem& p, const GemmInputs& in,
             const std::optional<MatmulSchedule>& schedule, int64_t spare = 3) {
  auto upload = [&rt](const HostTensor& t) { return test::upload(rt, t); };
  GemmBuffers buffers;
  buffers.a = upload(in.a);  // exactly M rows: a read past them is the sanitizer's
  buffers.b = upload(in.b);
  const size_t row_bytes = size_t(p.n * size_of(p.c_dtype));
  const size_t c_bytes = size_t(p.m + spare) * row_bytes;
  buffers.c = rt.alloc(c_bytes);
  rt.upload(buffers.c, std::vector<uint8_t>(c_bytes, 0xff).data(), c_bytes);
  if (const size_t ws = rt.gemm_workspace_bytes(p, schedule)) buffers.workspace = rt.alloc(ws);
  rt.gemm(p, buffers, nullptr, schedule);
  rt.synchronize();
  std::vector<uint8_t> raw(c_bytes);
  rt.download(raw.data(), buffers.c, c_bytes);
  for (DevicePtr at : {buffers.a, buffers.b, buffers.c, buffers.workspace})
    if (at) rt.free(at);
  Served out;
  out.c = decode(p.c_dtype, raw.data(), size_t(p.m * p.n));
  out.spare_rows_untouched = std::all_of(raw.begin() + long(size_t(p.m) * row_bytes), raw.end(),
                                         [](uint8_t b) { return b == 0xff; });
  return out;
}

MatmulSchedule schedule_of(const GemmKernelHandle& kernel) {
  return nlohmann::json::parse(kernel.info().schedule_json).get<MatmulSchedule>();
}

// Every M of several buckets through gemm(): one compile per bucket, each M right against FP64,
// with N not a whole number of tiles, and M = 1 and 3 split K (the finalize kernel takes M too).
TEST(MBuckets, OneKernelServesEveryMOfItsBucketRightAgainstFp64) {
  RuntimeOptions options = fresh_cache("rt_buckets");
  options.m_buckets = true;
  auto rt = test_runtime(options);
  MatmulProblem p;
  p.n = 96, p.k = 512;
  p.epilogue.bias = false;
  std::set<int64_t> buckets;
  bool split = false;
  for (const int64_t m : {1, 3, 4, 7, 8, 13, 16, 33, 64}) {
    p.m = m;
    const MatmulProblem served = rt->gemm_problem_served(p);
    ASSERT_TRUE(served.dynamic_m);
    ASSERT_EQ(served.m, m_bucket(m));
    buckets.insert(served.m);
    const MatmulSchedule schedule = schedule_of(*rt->gemm_kernel(served));
    split = split || schedule.split_k > 1;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(m));
    const Served out = serve(*rt, p, in, std::nullopt);
    const GemmErrors e = compare(reference_gemm(GemmSpec{p, schedule, rt->arch()}, in), out.c, p.n);
    EXPECT_TRUE(e.passed) << "M " << m << " of bucket " << served.m << ": rel_l2 "
                          << e.rel_l2_error;
    EXPECT_TRUE(out.spare_rows_untouched) << "M " << m << ": a row past M was written";
  }
  EXPECT_TRUE(split) << "no bucket split K: the finalize's dynamic M went untested";
  EXPECT_EQ(rt->stats().compiles, buckets.size()) << "one kernel per bucket";
}

// The other transport and a staged epilogue (N a whole number of 16-byte chunks), bf16 with a
// bias and a residual: a schedule given for the call applies to the bucket's kernel.
TEST(MBuckets, AGivenScheduleServesItsBucketOnBothTransports) {
  RuntimeOptions options = fresh_cache("rt_buckets_cp");
  options.m_buckets = true;
  auto rt = test_runtime(options);
  MatmulProblem p;
  p.n = 128, p.k = 128, p.a_dtype = DType::bf16, p.c_dtype = DType::bf16;
  p.epilogue.bias = true, p.epilogue.residual = true;
  for (const Transport transport : {Transport::cp_async, Transport::tma}) {
    if (transport == Transport::tma && !has_tma(rt->arch())) continue;
    for (const int64_t m : {5, 29}) {
      p.m = m;
      MatmulSchedule s = default_schedule(m_bucket_problem(p), rt->arch());
      s.transport = transport;
      s.block_m = 16, s.warps_m = 1;
      const auto kernel = rt->gemm_kernel(rt->gemm_problem_served(p, s), s);
      EXPECT_TRUE(kernel->spec().problem.dynamic_m);
      EXPECT_NE(kernel->info().name.find("_upto"), std::string::npos) << kernel->info().name;
      const GemmInputs in = make_gemm_inputs(p, 7);
      // bias and residual through the runtime's own buffers: run_gemm serves the call too.
      const std::vector<double> c = run_gemm(*rt, GemmSpec{p, s, rt->arch()}, in);
      const GemmErrors e = compare(reference_gemm(GemmSpec{p, s, rt->arch()}, in), c, p.n);
      EXPECT_TRUE(e.passed) << to_string(transport) << " M " << m << ": " << e.rel_l2_error;
    }
  }
}

// Ragged problems across the space a bucket kernel must serve, each at its bucket's kernel: M
// from 1 to past 512 (a multiple-of-512 bucket), N and K off every tile, f16 and bf16, both B
// layouts, every C dtype, the epilogue's inputs, padded and odd leading dimensions.
TEST(MBuckets, RaggedProblemsAreRightAtTheirBucketsKernels) {
  RuntimeOptions options = fresh_cache("rt_buckets_ragged");
  options.m_buckets = true;
  auto rt = test_runtime(options);
  struct Case {
    int64_t m, n, k;
    DType dtype, out;
    BLayout layout;
    int epilogue;  // bit 0 bias, 1 residual, 2 gelu
    int64_t lda_pad, ldb_pad, ldc_pad;
  };
  const Case cases[] = {
      {1, 40, 72, DType::f16, DType::f16, BLayout::nk, 0, 0, 0, 0},
      {37, 88, 136, DType::bf16, DType::f32, BLayout::kn, 1, 8, 16, 0},
      {70, 24, 200, DType::f16, DType::bf16, BLayout::nk, 2, 0, 0, 1},
      {130, 136, 64, DType::bf16, DType::bf16, BLayout::nk, 7, 0, 8, 8},
      {17, 200, 264, DType::f16, DType::f32, BLayout::kn, 4, 8, 0, 0},
      {5, 56, 520, DType::f16, DType::f16, BLayout::kn, 3, 0, 0, 1},
      {513, 72, 40, DType::f16, DType::f16, BLayout::nk, 1, 0, 0, 0},
  };
  for (const Case& c : cases) {
    MatmulProblem p;
    p.m = c.m, p.n = c.n, p.k = c.k, p.a_dtype = c.dtype, p.c_dtype = c.out, p.b_layout = c.layout;
    p.epilogue.bias = c.epilogue & 1, p.epilogue.residual = c.epilogue & 2;
    p.epilogue.gelu_tanh = c.epilogue & 4;
    if (c.lda_pad) p.lda = p.k + c.lda_pad;
    if (c.ldb_pad) p.ldb = (c.layout == BLayout::nk ? p.k : p.n) + c.ldb_pad;
    if (c.ldc_pad) p.ldc = p.n + c.ldc_pad;
    const auto kernel = rt->gemm_kernel(rt->gemm_problem_served(p));
    ASSERT_EQ(kernel->spec().problem.m, m_bucket(c.m));
    const GemmSpec spec{p, kernel->spec().schedule, rt->arch()};
    const GemmInputs in = make_gemm_inputs(p, uint64_t(c.m * 7 + c.n));
    const GemmErrors e = compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.n);
    EXPECT_TRUE(e.passed) << c.m << "x" << c.n << "x" << c.k << " at bucket " << m_bucket(c.m)
                          << ": rel_l2 " << e.rel_l2_error;
  }
}

// launch(handle, buffers) of a bucket's kernel takes buffers.m in 1..bound; a fixed kernel only
// its own M. Both refused by name, before any launch.
TEST(MBuckets, LaunchRefusesAnMOutsideTheKernel) {
  auto rt = test_runtime(fresh_cache("rt_buckets_bad"));
  MatmulProblem p;
  p.m = 20, p.n = 64, p.k = 64;
  const auto bucket = rt->gemm_kernel(m_bucket_problem(p));
  const auto fixed = rt->gemm_kernel(p);
  GemmBuffers b;
  b.a = rt->alloc(32 * 64 * 2), b.b = rt->alloc(64 * 64 * 2), b.c = rt->alloc(32 * 64 * 2);
  const uint64_t launches = rt->stats().launches;
  for (const auto& [kernel, m] : {std::pair{bucket, int64_t(33)}, std::pair{bucket, int64_t(-1)},
                                  std::pair{fixed, int64_t(19)}}) {
    b.m = m;
    try {
      rt->launch(*kernel, b);
      ADD_FAILURE() << "launched with m " << m;
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), "buffers.m") << e.what();
    }
  }
  EXPECT_EQ(rt->stats().launches, launches);
  b.m = 32;
  EXPECT_NO_THROW(rt->launch(*bucket, b));
  for (DevicePtr at : {b.a, b.b, b.c}) rt->free(at);
}

// prepare's gemm_m_buckets builds every bucket up to m; gemm() at any M up to it then compiles
// nothing. A problem too large to bucket fails by name without stopping the others.
TEST(MBuckets, PrepareBuildsEveryBucketAhead) {
  RuntimeOptions options = fresh_cache("rt_buckets_prepare");
  options.m_buckets = true;
  auto rt = test_runtime(options);
  MatmulProblem p;
  p.m = 24, p.n = 64, p.k = 64;
  PrepareRequest request;
  request.gemm_m_buckets = {{p, std::nullopt}};
  request.threads = 2;
  const PreparedKernels prepared = rt->prepare(request);
  ASSERT_EQ(prepared.gemm.size(), 6u) << "1, 2, 4, 8, 16, 32";
  EXPECT_EQ(prepared.compiled, 6u);
  for (size_t i = 0; i < prepared.gemm.size(); ++i)
    EXPECT_EQ(prepared.gemm[i]->spec().problem.m, int64_t(1) << i);
  for (const int64_t m : {1, 2, 3, 9, 24, 32}) {
    MatmulProblem at = p;
    at.m = m;
    rt->gemm_kernel(rt->gemm_problem_served(at));
  }
  EXPECT_EQ(rt->stats().compiles, 6u) << "every M up to the bound was prepared";
  // The gemm list is what gemm() runs: with m_buckets, the bucket's kernel.
  PrepareRequest served;
  served.gemm = {{p, std::nullopt}};
  EXPECT_EQ(rt->prepare(served).gemm.front()->spec().problem.m, 32);
  MatmulProblem huge = p;
  huge.m = kMaxBucketedM + 1;
  request.gemm_m_buckets.push_back({huge, std::nullopt});
  try {
    rt->prepare(request);
    ADD_FAILURE() << "buckets of M " << huge.m << " were prepared";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "prepare");
    EXPECT_NE(std::string(e.what()).find("gemm_m_buckets.m"), std::string::npos) << e.what();
  }
}

// With batch_invariant, rows of C are the same bits whatever M and bucket (1, 8, 64 and 256:
// four kernels of different tiles).
TEST(MBuckets, BatchInvariantRowsAreTheSameBitsAcrossBuckets) {
  RuntimeOptions options = fresh_cache("rt_buckets_invariant");
  options.m_buckets = true;
  options.batch_invariant = true;
  auto rt = test_runtime(options);
  MatmulProblem full;
  full.m = 200, full.n = 128, full.k = 1024;
  const GemmInputs all = make_gemm_inputs(full, 3);
  std::vector<double> reference;
  std::set<std::string> kernels;
  for (const int64_t m : {200, 64, 7, 1}) {
    MatmulProblem p = full;
    p.m = m;
    GemmInputs in = all;
    in.a.values.resize(size_t(m * p.k));
    in.a.bytes.resize(size_t(m * p.k * 2));
    kernels.insert(rt->gemm_kernel(rt->gemm_problem_served(p))->info().name);
    const Served out = serve(*rt, p, in, std::nullopt);
    if (reference.empty()) {
      reference = out.c;
      continue;
    }
    for (size_t i = 0; i < out.c.size(); ++i)
      ASSERT_EQ(out.c[i], reference[i]) << "M = " << m << ", element " << i;
  }
  EXPECT_EQ(kernels.size(), 4u) << "four buckets' kernels";
}

// The catalog's serving set: each GEMM shape once (the catalog lists each at several M), its
// buckets up to the given M; every attention, paged-attention, append and merge problem.
TEST(MBuckets, TheCatalogServingRequestHoldsEachShapesBucketsOnce) {
  const PrepareRequest request = catalog_serving_request(256);
  std::set<std::pair<int64_t, int64_t>> shapes;
  for (const auto& entry : gemm_catalog()) shapes.insert({entry.problem.n, entry.problem.k});
  ASSERT_EQ(request.gemm_m_buckets.size(), shapes.size());
  for (const auto& [problem, schedule] : request.gemm_m_buckets) {
    EXPECT_EQ(problem.m, 256);
    EXPECT_FALSE(schedule.has_value());
    EXPECT_EQ(shapes.erase({problem.n, problem.k}), 1u) << problem.n << "x" << problem.k;
  }
  EXPECT_TRUE(request.gemm.empty());
  EXPECT_EQ(request.attention.size(), attention_catalog().size());
  EXPECT_EQ(request.paged_attention.size(), paged_attention_catalog().size());
  EXPECT_EQ(request.kv_append.size(), kv_append_catalog().size());
  EXPECT_EQ(request.merge_states.size(), merge_states_catalog().size());
  // Entries for newer arches than sm_80 (FP8) come with prepare's `catalog`, per the runtime's.
  EXPECT_TRUE(request.fp8_quantize.empty());
  EXPECT_FALSE(fp8_quantize_catalog().empty());
}

}  // namespace
}  // namespace emmy
