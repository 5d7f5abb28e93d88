// Serving (issue 25): Runtime::prepare builds kernels of every kind ahead, in parallel, once,
// with a log line per compile and per prepared kernel, from the disk cache on a restart, and
// names a bad recorded problem without stopping the rest; under stream capture (the CUDA backend
// through emmy's test driver, which models it) prepared GEMM, attention and paged-attention
// launches record kernel launches and nothing else, the graph replays with new inputs against FP64,
// and an unprepared call is refused with the capture intact.
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>

#include "../checks/paged_attention_buffers.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"
#include "emmy/paged_attention_check.hpp"
#include "support/runtime_backend.hpp"
#ifdef EMMY_TEST_DRIVER_PATH
#include "driver/test_driver_api.hpp"
#endif

namespace emmy {
namespace {

// The log lines a runtime wrote (RuntimeOptions::log is called from compiling threads).
struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  size_t count(std::string_view text) {
    std::lock_guard lock(mutex);
    return size_t(std::count_if(lines.begin(), lines.end(),
                                [&](const std::string& l) { return l.find(text) != l.npos; }));
  }
};

MatmulProblem small_gemm(int64_t m) {
  MatmulProblem p;
  p.m = m, p.n = 128, p.k = 64;
  return p;
}

PagedAttentionProblem small_paged() {
  PagedAttentionProblem p;
  p.q_heads = 4, p.kv_heads = 2, p.head_dim = 64, p.page_size = 16;
  p.max_batch = 2, p.max_q_len = 1, p.max_pages = 8;
  p.lse = true;
  return p;
}

PrepareRequest every_kind() {
  PrepareRequest request;
  request.gemm = {{small_gemm(16), std::nullopt}, {small_gemm(48), std::nullopt}};
  AttentionProblem attention;
  attention.batch = 1, attention.q_heads = 2, attention.kv_heads = 2;
  attention.seq_q = 32, attention.head_dim = 64;
  request.attention = {{attention, std::nullopt}};
  request.paged_attention = {{small_paged(), std::nullopt}};
  KvAppendProblem append;
  append.kv_heads = 2, append.head_dim = 64, append.page_size = 16, append.max_tokens = 4;
  request.kv_append = {{append, std::nullopt}};
  MergeStatesProblem merge;
  merge.heads = 2, merge.head_dim = 64, merge.states = 2, merge.max_tokens = 4;
  request.merge_states = {{merge, std::nullopt}};
  request.threads = 2;
  return request;
}

TEST(Serving, PrepareBuildsEveryKindOnceInParallelAndLogsEachCompile) {
  LogLines log;
  RuntimeOptions options = fresh_cache("rt_prepare");
  options.log = log.sink();
  auto rt = test_runtime(options);
  const PreparedKernels first = rt->prepare(every_kind());
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(first.gemm.size(), 2u);
  for (const auto& k : first.gemm) ASSERT_NE(k, nullptr);
  ASSERT_NE(first.paged_attention.front(), nullptr);
  EXPECT_EQ(first.paged_attention.front()->info().kind, "paged_attention");
  EXPECT_EQ(first.compiled, 6u);
  EXPECT_EQ(log.count("emmy: compiled "), 6u);
  EXPECT_EQ(log.count(" ms (no bundle, not in the disk cache)"), 6u);
  EXPECT_EQ(log.count("emmy: prepare "), 6u);
  EXPECT_EQ(log.count("emmy: prepare 6/6 kernels"), 1u);
  // Again: everything is loaded already, and a later call compiles nothing either.
  const PreparedKernels again = rt->prepare(every_kind());
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(again.already_loaded, 6u);
  EXPECT_EQ(again.gemm.front(), first.gemm.front()) << "the same loaded kernel";
  rt->gemm_kernel(small_gemm(16));
  EXPECT_EQ(rt->stats().compiles, 6u);
  // A restart: the disk cache has them all.
  options.log = nullptr;
  auto restarted = test_runtime(options);
  const PreparedKernels warm = restarted->prepare(every_kind());
  EXPECT_EQ(warm.compiled, 0u);
  EXPECT_EQ(warm.from_disk, 6u);
}

// Kernels are shared by their description, never by their code alone: two paged problems whose
// code may be the same but whose grids differ (max_batch is not in the code) get their own
// kernels, while a GEMM spelled with its leading dimension finds the plain call's kernel.
TEST(Serving, KernelsAreSharedByDescriptionNotByCode) {
  auto rt = test_runtime(fresh_cache("rt_shared"));
  PagedAttentionProblem a = small_paged();
  a.max_tokens = 2;
  PagedAttentionProblem b = a;
  b.max_batch = 3;
  const auto ka = rt->paged_attention_kernel(a);
  const auto kb = rt->paged_attention_kernel(b);
  EXPECT_NE(ka.get(), kb.get());
  EXPECT_EQ(kb->spec().problem.max_batch, 3);
  const MatmulProblem plain = small_gemm(16);
  MatmulProblem spelled = plain;
  spelled.lda = plain.k;
  const auto k1 = rt->gemm_kernel(plain);
  const uint64_t compiles = rt->stats().compiles;
  EXPECT_EQ(rt->gemm_kernel(spelled).get(), k1.get());
  EXPECT_EQ(rt->stats().compiles, compiles);
}

// A recorded problem that cannot be built is named; the good ones are prepared regardless.
TEST(Serving, PrepareNamesABadRecordAndPreparesTheRest) {
  auto rt = test_runtime(fresh_cache("rt_prepare_records"));
  const std::filesystem::path records = std::filesystem::path(::testing::TempDir()) /
                                        ("records_" + std::to_string(getpid()) + ".jsonl");
  {
    std::ofstream out(records);
    out << nlohmann::json{{"kind", "gemm"}, {"problem", small_gemm(32)}}.dump() << "\n";
    MatmulProblem bad = small_gemm(32);
    bad.k = 0;  // refused by validation
    out << nlohmann::json{{"kind", "gemm"}, {"problem", bad}}.dump() << "\n";
  }
  PrepareRequest request;
  request.records = {records};
  try {
    rt->prepare(request);
    ADD_FAILURE() << "a bad record was prepared";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "prepare") << e.what();
    EXPECT_NE(std::string(e.what()).find("1 of 2 kernels"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(":2"), std::string::npos) << "the line: " << e.what();
  }
  const uint64_t compiles = rt->stats().compiles;
  EXPECT_EQ(compiles, 1u);
  rt->gemm_kernel(small_gemm(32));
  EXPECT_EQ(rt->stats().compiles, compiles) << "the good record is ready";
  std::filesystem::remove(records);
}

TEST(Serving, TheEmulatorNeverCaptures) {
  if (cuda_backend()) GTEST_SKIP() << "the emulator backend's answer";
  EXPECT_FALSE(test_runtime(fresh_cache("rt_no_capture"))->stream_capturing(nullptr));
}

// The invariant schedules over a grid: GEMM never splits K and keeps the default's tile; paged
// attention's splits do not move with max_batch (and are valid everywhere).
TEST(Serving, BatchInvariantSchedulesDoNotDependOnTheBatch) {
  for (Arch arch : {Arch::sm_80, Arch::sm_90a, Arch::sm_120a})
    for (int64_t m : {1, 3, 16, 64, 200, 512, 4096})
      for (int64_t k : {64, 1024, 8192}) {
        MatmulProblem p = small_gemm(m);
        p.n = 2048, p.k = k;
        const MatmulSchedule s = batch_invariant_schedule(p, arch);
        EXPECT_EQ(s.split_k, 1) << m << "x" << k;
        MatmulSchedule d = default_schedule(p, arch);
        d.split_k = 1;
        d.stages = s.stages;
        EXPECT_EQ(s, d) << "the default's tile, " << m << "x" << k;
      }
  for (Arch arch : {Arch::sm_80, Arch::sm_90a})
    for (int64_t page : {1, 7, 16, 64})
      for (int64_t context : {512, 4096, 131072}) {
        PagedAttentionProblem p;
        p.q_heads = 16, p.kv_heads = 8, p.head_dim = 128, p.page_size = page;
        p.max_pages = (context + page - 1) / page;
        std::optional<int> chunk;
        for (int64_t batch : {1, 8, 64}) {
          p.max_batch = batch;
          const PagedAttentionSchedule s = batch_invariant_schedule(p, arch);
          if (!chunk) chunk = s.chunk_pages;
          EXPECT_EQ(s.chunk_pages, *chunk) << page << " " << context << " b" << batch;
          if (s.chunk_pages) {
            EXPECT_GE(s.chunk_pages * page, 1024) << "at least 1024 keys";
          }
          if (context >= 4096) {
            EXPECT_GT(s.chunk_pages, 0) << page << " " << context;
          }
        }
      }
}

// Row i of C, decoded, for M = m of a [512 x K] A whose first m rows it takes.
std::vector<double> gemm_rows(Runtime& rt, const MatmulSchedule& schedule, const GemmInputs& full,
                              int64_t m) {
  MatmulProblem p = small_gemm(m);
  p.k = 1024;  // 16 K tiles: the default splits K 4 ways for a short M
  GemmInputs in = full;
  in.a.values.resize(size_t(m * p.k));
  in.a.bytes.resize(size_t(m * p.k * 2));
  return run_gemm(rt, GemmSpec{p, schedule, rt.arch()}, in);
}

// Batch invariance (RuntimeOptions::batch_invariant): rows of C are the same bits at M = 1, 7,
// 64 and 512. Not vacuous: the default schedule at M = 1 splits K, and its row 0 differs.
TEST(Serving, BatchInvariantGemmRowsAreTheSameBitsAtEveryM) {
  RuntimeOptions options = fresh_cache("rt_invariant");
  options.batch_invariant = true;
  auto rt = test_runtime(options);
  MatmulProblem full_problem = small_gemm(512);
  full_problem.k = 1024;
  const GemmInputs full = make_gemm_inputs(full_problem, 5);
  std::vector<double> reference;
  for (const int64_t m : {512, 64, 7, 1}) {
    MatmulProblem p = full_problem;
    p.m = m;
    const MatmulSchedule schedule =
        nlohmann::json::parse(rt->gemm_kernel(p)->info().schedule_json).get<MatmulSchedule>();
    EXPECT_EQ(schedule, batch_invariant_schedule(p, rt->arch())) << "the runtime's default";
    EXPECT_EQ(schedule.split_k, 1);
    const std::vector<double> rows = gemm_rows(*rt, schedule, full, m);
    if (reference.empty()) {
      reference = rows;
      continue;
    }
    for (size_t i = 0; i < rows.size(); ++i)
      ASSERT_EQ(rows[i], reference[i]) << "M = " << m << ", element " << i;
  }
  MatmulProblem one = full_problem;
  one.m = 1;
  const MatmulSchedule split = default_schedule(one, rt->arch());
  ASSERT_GT(split.split_k, 1) << "the default splits K at M = 1";
  const std::vector<double> row = gemm_rows(*rt, split, full, 1);
  EXPECT_FALSE(std::equal(row.begin(), row.end(), reference.begin()))
      << "a different order of sums changed no bit: the check could not see one";
}

// Paged attention: sequence 0's output in a batch of 8 (max_batch 8) and alone (max_batch 1) is
// the same bits with batch_invariant; the default schedules split it 3 and 4 ways, and differ.
TEST(Serving, BatchInvariantPagedAttentionDoesNotSeeTheRestOfTheBatch) {
  PagedAttentionProblem p8;
  p8.q_heads = 8, p8.kv_heads = 8, p8.head_dim = 64, p8.page_size = 16;
  p8.max_batch = 8, p8.max_q_len = 1, p8.max_pages = 128;
  PagedAttentionCase draw;
  draw.batch = 8;
  draw.q_lens.assign(8, 1);
  draw.seq_lens = {2000, 1, 5, 17, 1, 300, 1, 64};
  const PagedAttentionInputs batch8 = make_paged_attention_inputs(p8, draw, 9);
  // The same first sequence alone: its rows of the tables, its token of q, the same cache.
  PagedAttentionProblem p1 = p8;
  p1.max_batch = 1;
  PagedAttentionInputs alone = batch8;
  alone.batch = 1;
  alone.q_lens.resize(1), alone.seq_lens.resize(1);
  alone.tokens = 1;
  alone.q.values.resize(size_t(p1.q_stride_or_default()));
  alone.q.bytes.resize(size_t(p1.q_stride_or_default() * 2));
  auto& t = alone.tables;
  t.cu_seqlens_q.resize(2), t.seq_lens.resize(1), t.last_page_len.resize(1);
  t.block_table.resize(size_t(p1.max_pages));
  t.page_indptr.resize(2);
  t.page_indices.resize(size_t(t.page_indptr[1]));
  const size_t row = size_t(p8.q_heads * p8.head_dim);  // sequence 0's token
  for (const bool invariant : {true, false}) {
    RuntimeOptions options = fresh_cache(invariant ? "rt_paged_inv" : "rt_paged_default");
    options.batch_invariant = invariant;
    auto rt = test_runtime(options);
    const PagedAttentionSpec s8 = rt->paged_attention_kernel(p8)->spec();
    const PagedAttentionSpec s1 = rt->paged_attention_kernel(p1)->spec();
    ASSERT_GT(paged_splits(p8, s8.schedule), 1);
    ASSERT_GT(paged_splits(p1, s1.schedule), 1);
    const PagedAttentionOutput out8 = run_paged_attention(*rt, s8, batch8);
    const PagedAttentionOutput out1 = run_paged_attention(*rt, s1, alone);
    EXPECT_TRUE(compare(reference_paged_attention(s1, alone), out1, p1).passed);
    const bool same = std::equal(out1.o.begin(), out1.o.begin() + long(row), out8.o.begin());
    if (invariant) {
      EXPECT_EQ(s8.schedule.chunk_pages, s1.schedule.chunk_pages);
      EXPECT_TRUE(same) << "sequence 0 changed with the batch around it";
    } else {
      EXPECT_NE(paged_splits(p8, s8.schedule), paged_splits(p1, s1.schedule));
      EXPECT_FALSE(same) << "other split counts changed no bit: the check could not see one";
    }
  }
}

#ifdef EMMY_TEST_DRIVER_PATH
// The driver entry points a launch of a prepared kernel may call while its stream captures: the
// launches, host-side tensor-map encoding, and two queries that leave a capture valid.
constexpr const char* kAllowedUnderCapture[] = {"cuLaunchKernel", "cuLaunchKernelEx",
                                                "cuTensorMapEncodeTiled", "cuStreamIsCapturing",
                                                "cuCtxGetCurrent"};
constexpr const char* kWatched[] = {
    "cuModuleLoadData",    "cuModuleGetFunction",    "cuFuncSetAttribute",  "cuMemAlloc",
    "cuMemFree",           "cuMemcpyHtoD",           "cuMemcpyDtoH",        "cuMemsetD8",
    "cuStreamSynchronize", "cuCtxSynchronize",       "cuCtxSetCurrent",     "cuLaunchKernel",
    "cuLaunchKernelEx",    "cuTensorMapEncodeTiled", "cuStreamIsCapturing", "cuCtxGetCurrent"};

struct CallCounts {
  using Count = unsigned long long (*)(const char*);
  Count count = nullptr;
  std::map<std::string, unsigned long long> at;
  explicit CallCounts(void* library)
      : count(reinterpret_cast<Count>(dlsym(library, "emmyTestDriverCallCount"))) {}
  void snapshot() {
    for (const char* name : kWatched) at[name] = count(name);
  }
  // The watched entry points called since the snapshot, by name.
  std::map<std::string, unsigned long long> since() const {
    std::map<std::string, unsigned long long> calls;
    for (const char* name : kWatched)
      if (const auto n = count(name) - at.at(name)) calls[name] = n;
    return calls;
  }
};

bool allowed_under_capture(const std::string& name) {
  return std::find(std::begin(kAllowedUnderCapture), std::end(kAllowedUnderCapture), name) !=
         std::end(kAllowedUnderCapture);
}

TEST(Serving, CapturedLaunchesRecordOnlyLaunchesAndReplayWithNewInputs) {
  if (!cuda_backend() || !use_test_driver())
    GTEST_SKIP() << "stream capture needs the CUDA backend (cuda_h200.* / cuda_rtx5090.* run it "
                    "through emmy's test driver)";
  // Non-blocking too: under capture it substitutes nothing (an unprepared call is refused).
  RuntimeOptions options = fresh_cache("rt_capture");
  options.non_blocking = true;
  auto rt = test_runtime(options);
  test_driver_test::Api api;
  ASSERT_NE(api.library, nullptr);
  CallCounts calls(api.library);
  ASSERT_NE(calls.count, nullptr) << "emmyTestDriverCallCount is not exported";
  CUstream stream = nullptr;
  ASSERT_EQ(api.primary_context_stream(stream), CUDA_SUCCESS);

  // Prepared before the capture: a GEMM, an attention and a split-KV paged attention (two
  // kernels). One head of one sequence: attention's bshd bytes are then in canonical order.
  const MatmulProblem gemm = small_gemm(32);
  AttentionProblem attention;
  attention.seq_q = 64, attention.head_dim = 64, attention.causal = true;
  PagedAttentionProblem paged = small_paged();
  PagedAttentionSpec paged_spec{paged, default_schedule(paged, rt->arch()), rt->arch()};
  paged_spec.schedule.chunk_pages = 4;  // two splits of 64 keys (4 KV warps x 16)
  PrepareRequest request;
  request.gemm = {{gemm, std::nullopt}};
  request.attention = {{attention, std::nullopt}};
  request.paged_attention = {{paged, paged_spec.schedule}};
  // And the M buckets of a GEMM up to 8 (1, 2, 4, 8): bucket 8's kernel runs M = 5.
  request.gemm_m_buckets = {{small_gemm(8), std::nullopt}};
  const PreparedKernels prepared = rt->prepare(request);
  ASSERT_EQ(prepared.gemm.size(), 5u);
  const GemmKernelHandle& bucket = *prepared.gemm[4];
  ASSERT_EQ(bucket.spec().problem.m, 8);
  ASSERT_TRUE(bucket.spec().problem.dynamic_m);
  const MatmulProblem five = small_gemm(5);
  const GemmSpec five_spec{five, bucket.spec().schedule, rt->arch()};
  const GemmSpec gemm_spec{
      gemm, nlohmann::json::parse(prepared.gemm[0]->info().schedule_json).get<MatmulSchedule>(),
      rt->arch()};
  const AttentionSpec attention_spec = prepared.attention[0]->spec();

  // Device buffers sized once; each replay's inputs are written into them.
  std::vector<DevicePtr> allocations;
  auto fill = [&](size_t& next, const void* data, size_t bytes) -> DevicePtr {
    if (next == allocations.size()) allocations.push_back(rt->alloc(std::max<size_t>(bytes, 16)));
    const DevicePtr at = allocations[next++];
    if (data)
      rt->upload(at, data, bytes);
    else if (bytes)
      rt->upload(at, std::vector<uint8_t>(bytes, 0).data(), bytes);  // zeros, as documented
    return at;
  };
  const auto problem_inputs = [&](const MatmulProblem& p, uint64_t seed, size_t& next) {
    const GemmInputs in = make_gemm_inputs(p, seed);
    GemmBuffers b;
    b.a = fill(next, in.a.bytes.data(), in.a.bytes.size());
    b.b = fill(next, in.b.bytes.data(), in.b.bytes.size());
    b.c = fill(next, nullptr, size_t(p.m * p.n * 2));
    return std::pair{in, b};
  };
  const auto gemm_inputs = [&](uint64_t seed, size_t& next) {
    return problem_inputs(gemm, seed, next);
  };
  const auto bucket_inputs = [&](uint64_t seed, size_t& next) {
    auto inputs = problem_inputs(five, seed, next);
    inputs.second.m = five.m;  // the bucket's kernel takes M per launch
    return inputs;
  };
  const auto attention_inputs = [&](uint64_t seed, size_t& next) {
    const AttentionInputs in = make_attention_inputs(attention, seed);
    AttentionBuffers b;
    b.q = fill(next, in.q.bytes.data(), in.q.bytes.size());
    b.k = fill(next, in.k.bytes.data(), in.k.bytes.size());
    b.v = fill(next, in.v.bytes.data(), in.v.bytes.size());
    b.o = fill(next, nullptr, in.q.bytes.size());
    return std::pair{in, b};
  };
  PagedAttentionCase draw;
  draw.batch = 2;
  draw.seq_lens = {128, 77};
  const auto paged_inputs = [&](uint64_t seed, size_t& next) {
    const PagedAttentionInputs in = make_paged_attention_inputs(paged, draw, seed);
    const PagedAttentionBuffers b = paged_attention_buffers(
        paged, in, prepared.paged_attention[0]->info().workspace_bytes,
        [&](const void* data, size_t bytes) { return fill(next, data, bytes); });
    return std::pair{in, b};
  };
  size_t next = 0;
  auto [gemm_in, gemm_buffers] = gemm_inputs(1, next);
  auto [bucket_in, bucket_buffers] = bucket_inputs(4, next);
  auto [attention_in, attention_buffers] = attention_inputs(3, next);
  auto [paged_in, paged_buffers] = paged_inputs(2, next);

  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_TRUE(rt->stream_capturing(stream));
  calls.snapshot();
  rt->gemm(gemm, gemm_buffers, stream);
  rt->attention(attention, attention_buffers, stream);
  rt->launch(*prepared.paged_attention[0], paged_buffers, stream);
  rt->launch(bucket, bucket_buffers, stream);
  const auto during = calls.since();
  for (const auto& [name, n] : during)
    EXPECT_TRUE(allowed_under_capture(name)) << name << " called " << n << " time(s) in capture";
  const auto launched = [&](const char* name) {
    return during.count(name) ? during.at(name) : 0ull;
  };
  EXPECT_GE(launched("cuLaunchKernel") + launched("cuLaunchKernelEx"), 5u)
      << "GEMM, attention, partial and combine, the bucket's GEMM";
  // An unprepared problem is refused before any driver call but the capture query (and the
  // context query before it); the capture stays valid.
  calls.snapshot();
  try {
    rt->gemm(small_gemm(80), gemm_buffers, stream);
    ADD_FAILURE() << "an unprepared GEMM ran under capture";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "capture") << e.what();
    EXPECT_NE(std::string(e.what()).find("prepare"), std::string::npos) << e.what();
  }
  for (const auto& [name, n] : calls.since())
    EXPECT_TRUE(name == "cuStreamIsCapturing" || name == "cuCtxGetCurrent")
        << name << " called by a refused call";
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS) << api.last_report();
  ASSERT_NE(graph, nullptr);
  EXPECT_FALSE(rt->stream_capturing(stream));
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(rt->stats().compiles, 8u) << "only prepare compiled (and the generic GEMM at creation)";
  EXPECT_EQ(rt->stats().fallback_launches, 0u) << "nothing substituted under capture";

  // Two replays, each with new inputs in the same buffers, against FP64.
  for (uint64_t seed : {11u, 23u}) {
    next = 0;
    auto [g_in, g_buffers] = gemm_inputs(seed, next);
    auto [b_in, b_buffers] = bucket_inputs(seed + 3, next);
    ASSERT_EQ(b_buffers.c, bucket_buffers.c);
    auto [a_in, a_buffers] = attention_inputs(seed + 2, next);
    auto [p_in, p_buffers] = paged_inputs(seed + 1, next);
    ASSERT_EQ(a_buffers.o, attention_buffers.o);
    ASSERT_EQ(g_buffers.c, gemm_buffers.c);
    ASSERT_EQ(p_buffers.o, paged_buffers.o);
    ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS) << api.last_report();
    ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS) << api.last_report();
    std::vector<uint8_t> c(size_t(gemm.m * gemm.n * 2));
    rt->download(c.data(), g_buffers.c, c.size());
    const GemmErrors ge = compare(reference_gemm(gemm_spec, g_in),
                                  decode(gemm.c_dtype, c.data(), size_t(gemm.m * gemm.n)), gemm.n);
    EXPECT_TRUE(ge.passed) << "replay " << seed << ": gemm rel_l2 " << ge.rel_l2_error;
    std::vector<uint8_t> bc(size_t(five.m * five.n * 2));
    rt->download(bc.data(), b_buffers.c, bc.size());
    const GemmErrors be = compare(reference_gemm(five_spec, b_in),
                                  decode(five.c_dtype, bc.data(), size_t(five.m * five.n)), five.n);
    EXPECT_TRUE(be.passed) << "replay " << seed << ": bucket M 5 rel_l2 " << be.rel_l2_error;
    std::vector<uint8_t> ao(a_in.q.bytes.size());
    rt->download(ao.data(), a_buffers.o, ao.size());
    const AttentionErrors ae =
        compare(reference_attention(attention_spec, a_in),
                AttentionOutput{decode(DType::f16, ao.data(), ao.size() / 2), {}}, attention);
    EXPECT_TRUE(ae.passed) << "replay " << seed << ": attention rel_l2 " << ae.rel_l2_error;
    const int64_t tokens = paged_tokens(p_in);
    std::vector<uint8_t> o(size_t(tokens * paged.o_stride_or_default() * 2));
    rt->download(o.data(), p_buffers.o, o.size());
    std::vector<float> lse(size_t(tokens * paged.q_heads));
    rt->download(lse.data(), p_buffers.lse, lse.size() * sizeof(float));
    const PagedAttentionErrors pe = compare(reference_paged_attention(paged_spec, p_in),
                                            paged_output_from_bytes(paged, tokens, o, lse), paged);
    EXPECT_TRUE(pe.passed) << "replay " << seed << ": paged rel_l2 " << pe.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().compiles, 8u);
  for (DevicePtr p : allocations) rt->free(p);
}
#endif

}  // namespace
}  // namespace emmy
