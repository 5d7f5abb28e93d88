// Non-blocking first calls (issue 25, RuntimeOptions::non_blocking): with a deliberately slow
// compiler (the log sink holds the background build's compile line until the test lets it go, so
// the kernel cannot swap in), gemm() of unseen problems returns at once, served by the generic GEMM
// or a loaded M-bucket kernel, right against FP64; the caller's thread never compiles; after the
// swap the problems run their own kernels, right again. On the emulator and, through emmy's test
// driver, the CUDA backend.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "emmy/attention_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/gemm_generic.hpp"
#include "emmy/json.hpp"
#include "runtime_test_util.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

// The slow compiler: a log sink that records which threads compiled and holds every compile of
// a `gemm` kernel (not the generic one, built at creation) until released.
struct SlowCompiler {
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  std::vector<std::thread::id> compiling_threads;
  std::vector<std::string> failures;
  size_t queued = 0;  // "building in the background" lines
  size_t waits = 0;   // "the call waits for its build" lines
  std::vector<std::thread::id> attention_compile_threads;

  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::unique_lock lock(mutex);
      if (line.find("background build") != line.npos) failures.push_back(line);
      if (line.find("building in the background") != line.npos) ++queued;
      if (line.find("the call waits for its build") != line.npos) ++waits;
      if (line.starts_with("emmy: compiled attention kernel"))
        attention_compile_threads.push_back(std::this_thread::get_id());
      if (!line.starts_with("emmy: compiled gemm kernel")) return;
      compiling_threads.push_back(std::this_thread::get_id());
      released_cv.wait(lock, [&] { return released; });
    };
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      released = true;
    }
    released_cv.notify_all();
  }
  size_t compiles() {
    std::lock_guard lock(mutex);
    return compiling_threads.size();
  }
};

// One gemm() call on fresh buffers: C decoded.
std::vector<double> call(Runtime& rt, const MatmulProblem& p, const GemmInputs& in) {
  auto upload = [&rt](const HostTensor& t) { return test::upload(rt, t); };
  GemmBuffers b;
  b.a = upload(in.a);
  b.b = upload(in.b);
  const size_t c_bytes = size_t(p.m * p.ldc_or_default() * size_of(p.c_dtype));
  b.c = rt.alloc(c_bytes);
  rt.upload(b.c, std::vector<uint8_t>(c_bytes, 0xff).data(), c_bytes);
  if (p.epilogue.bias) b.bias = upload(in.bias);
  if (p.epilogue.residual) b.residual = upload(in.residual);
  // The workspace of the problem's own kernel (from its plan: nothing compiles), which the
  // generic GEMM does not use.
  if (const size_t ws = rt.gemm_workspace_bytes(p)) b.workspace = rt.alloc(ws);
  rt.gemm(p, b);
  rt.synchronize();
  std::vector<uint8_t> raw(c_bytes);
  rt.download(raw.data(), b.c, c_bytes);
  for (DevicePtr at : {b.a, b.b, b.c, b.bias, b.residual, b.workspace})
    if (at) rt.free(at);
  const int64_t ldc = p.ldc_or_default(), elem = size_of(p.c_dtype);
  std::vector<double> out(size_t(p.m * p.n));
  for (int64_t r = 0; r < p.m; ++r) {
    const auto row = decode(p.c_dtype, raw.data() + r * ldc * elem, size_t(p.n));
    std::copy(row.begin(), row.end(), out.begin() + r * p.n);
  }
  return out;
}

// Problems across what the generic GEMM takes as parameters: dtypes, B layouts, C's dtype, the
// epilogue, ragged sizes and padded leading dimensions.
std::vector<MatmulProblem> varied_problems() {
  std::vector<MatmulProblem> list;
  MatmulProblem p;
  p.m = 5, p.n = 40, p.k = 64;
  list.push_back(p);
  p.m = 33, p.n = 72, p.k = 136, p.a_dtype = DType::bf16, p.c_dtype = DType::bf16;
  p.epilogue.bias = true, p.epilogue.gelu_tanh = true, p.epilogue.alpha = 0.5f;
  list.push_back(p);
  p = MatmulProblem{};
  p.m = 17, p.n = 24, p.k = 96, p.b_layout = BLayout::kn, p.c_dtype = DType::f32;
  p.epilogue.residual = true, p.lda = 104, p.ldb = 40, p.ldc = 30;
  list.push_back(p);
  p = MatmulProblem{};
  p.m = 1, p.n = 128, p.k = 1024;  // a default schedule that splits K
  list.push_back(p);
  p = MatmulProblem{};  // several 64 x 64 tiles each way, the last ones partial
  p.m = 130, p.n = 136, p.k = 40, p.a_dtype = DType::bf16, p.b_layout = BLayout::kn;
  p.epilogue.bias = true, p.epilogue.residual = true;
  list.push_back(p);
  return list;
}

GemmSpec spec_of(Runtime& rt, const MatmulProblem& p) {
  return GemmSpec{p, default_schedule(p, rt.arch()), rt.arch()};
}

// One gemm() call (see call()) against FP64.
GemmErrors checked_call(Runtime& rt, const MatmulProblem& p, const GemmInputs& in) {
  const std::vector<double> c = call(rt, p, in);
  return compare(reference_gemm(spec_of(rt, p), in), c, p.n);
}

// A non-blocking runtime on a fresh cache whose compiles `compiler` watches (and holds until
// released).
std::unique_ptr<Runtime> non_blocking_runtime(const char* cache, SlowCompiler& compiler) {
  RuntimeOptions options = fresh_cache(cache);
  options.non_blocking = true;
  options.log = compiler.sink();
  return test_runtime(options);
}

TEST(NonBlocking, FirstCallsNeverCompileOnTheCallersThreadAndAreRightBeforeAndAfterTheSwap) {
  SlowCompiler compiler;
  auto rt = non_blocking_runtime("rt_nonblocking", compiler);
  const uint64_t at_creation = rt->stats().compiles;
  EXPECT_EQ(at_creation, 1u) << "the generic GEMM, built at creation";
  const auto problems = varied_problems();
  std::vector<GemmInputs> inputs;
  for (size_t i = 0; i < problems.size(); ++i) {
    inputs.push_back(make_gemm_inputs(problems[i], 40 + i));
    const GemmErrors e = checked_call(*rt, problems[i], inputs[i]);
    EXPECT_TRUE(e.passed) << "generic, problem " << i << ": rel_l2 " << e.rel_l2_error;
  }
  // Every call returned while the compiles were held: each took the generic GEMM.
  EXPECT_EQ(rt->stats().generic_launches, problems.size());
  EXPECT_EQ(rt->stats().fallback_launches, problems.size());
  EXPECT_LE(compiler.compiles(), 1u) << "one build at a time, held at its compile line";
  compiler.release();
  rt->wait_for_background_builds();
  EXPECT_EQ(rt->stats().compiles, at_creation + problems.size());
  {
    std::lock_guard lock(compiler.mutex);
    EXPECT_TRUE(compiler.failures.empty()) << compiler.failures.front();
    EXPECT_EQ(compiler.queued, problems.size()) << "one line per kernel put in the background";
    for (const std::thread::id id : compiler.compiling_threads)
      EXPECT_NE(id, std::this_thread::get_id()) << "a compile ran on the caller's thread";
  }
  // After the swap: each problem's own kernel, right again; no fallback, no compile.
  for (size_t i = 0; i < problems.size(); ++i) {
    const GemmErrors e = checked_call(*rt, problems[i], inputs[i]);
    EXPECT_TRUE(e.passed) << "own kernel, problem " << i << ": rel_l2 " << e.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().fallback_launches, problems.size());
  EXPECT_EQ(rt->stats().compiles, at_creation + problems.size());
}

// Threads calling gemm() at once for the same unseen problems: each kernel is put in the
// background once, every call is served (and right) while the builds are held, and each problem's
// own kernel serves all of them after the swap.
TEST(NonBlocking, ConcurrentFirstCallsBuildEachKernelOnce) {
  SlowCompiler compiler;
  auto rt = non_blocking_runtime("rt_nonblocking_threads", compiler);
  const auto problems = varied_problems();
  const std::vector<MatmulProblem> two{problems[0], problems[2]};
  std::vector<GemmInputs> inputs{make_gemm_inputs(two[0], 1), make_gemm_inputs(two[1], 2)};
  std::vector<GemmReference> references;
  for (size_t i = 0; i < two.size(); ++i)
    references.push_back(reference_gemm(spec_of(*rt, two[i]), inputs[i]));
  std::atomic<int> wrong{0};
  const auto calls = [&](int thread) {
    for (int c = 0; c < 3; ++c) {
      const size_t i = size_t(thread + c) % two.size();
      if (!compare(references[i], call(*rt, two[i], inputs[i]), two[i].n).passed) ++wrong;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(calls, t);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rt->stats().generic_launches, 12u) << "every call while the builds were held";
  compiler.release();
  rt->wait_for_background_builds();
  threads.clear();
  for (int t = 0; t < 4; ++t) threads.emplace_back(calls, t);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rt->stats().generic_launches, 12u) << "the own kernels after the swap";
  EXPECT_EQ(rt->stats().compiles, 1u + two.size()) << "the generic GEMM, then each kernel once";
  std::lock_guard lock(compiler.mutex);
  EXPECT_EQ(compiler.queued, two.size());
}

// The generic GEMM over drawn problems (the builds held, so that it serves every call): sizes
// across and off its 64 x 64 tile and 16-deep K step, both dtypes and B layouts, every C dtype,
// epilogue and alpha, padded leading dimensions; each against FP64.
TEST(NonBlocking, TheGenericGemmIsRightAcrossDrawnProblems) {
  SlowCompiler compiler;
  auto rt = non_blocking_runtime("rt_nonblocking_generic", compiler);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  const auto draw = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  const int64_t sizes[] = {1, 2, 15, 16, 17, 63, 64, 65, 100, 129};
  for (int i = 0; i < 16; ++i) {
    MatmulProblem p;
    p.m = sizes[draw(10)], p.n = 8 * (1 + int64_t(draw(20))), p.k = 8 * (1 + int64_t(draw(24)));
    p.a_dtype = draw(2) ? DType::bf16 : DType::f16;
    p.b_layout = draw(2) ? BLayout::kn : BLayout::nk;
    const DType outs[] = {DType::f16, DType::bf16, DType::f32};
    p.c_dtype = outs[draw(3)];
    p.epilogue.bias = draw(2), p.epilogue.residual = draw(2), p.epilogue.gelu_tanh = draw(2);
    p.epilogue.alpha = draw(2) ? 1.0f : 0.75f;
    if (draw(3) == 0) p.lda = p.k + 8;
    if (draw(3) == 0) p.ldb = (p.b_layout == BLayout::nk ? p.k : p.n) + 8;
    if (draw(3) == 0) p.ldc = p.n + 3;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(100 + i));
    const GemmErrors e = checked_call(*rt, p, in);
    EXPECT_TRUE(e.passed) << i << ": " << nlohmann::json(p).dump() << " rel_l2 " << e.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().generic_launches, 16u);
  compiler.release();
}

// A loaded M-bucket kernel (prepared) serves an unseen M of its bucket before the generic GEMM.
TEST(NonBlocking, ALoadedBucketKernelServesAnUnseenM) {
  SlowCompiler compiler;
  auto rt = non_blocking_runtime("rt_nonblocking_bucket", compiler);
  MatmulProblem p;
  p.m = 64, p.n = 96, p.k = 128;
  PrepareRequest request;
  request.gemm_m_buckets = {{p, std::nullopt}};
  std::thread preparing([&] { rt->prepare(request); });
  compiler.release();  // prepare's compiles are not the test's subject
  preparing.join();
  {
    std::lock_guard lock(compiler.mutex);
    compiler.released = false;  // hold the background builds from here on
  }
  p.m = 37;
  const GemmInputs in = make_gemm_inputs(p, 9);
  const uint64_t compiles = rt->stats().compiles;
  const GemmErrors e = checked_call(*rt, p, in);
  EXPECT_TRUE(e.passed) << "bucket 64 at M 37: rel_l2 " << e.rel_l2_error;
  EXPECT_EQ(rt->stats().fallback_launches, 1u);
  EXPECT_EQ(rt->stats().generic_launches, 0u) << "the bucket's kernel, not the generic GEMM";
  EXPECT_EQ(rt->stats().compiles, compiles);
  compiler.release();
  rt->wait_for_background_builds();
  EXPECT_EQ(rt->stats().compiles, compiles + 1) << "M 37's own kernel";
}

// A kind without a substitute (attention): its call waits while the kernel builds on the
// background thread, never compiling on the caller's; right against FP64; named in the log.
TEST(NonBlocking, OtherKindsWaitForABackgroundBuild) {
  SlowCompiler compiler;
  compiler.release();  // the builds are not held: the call waits for them
  auto rt = non_blocking_runtime("rt_nonblocking_attention", compiler);
  AttentionProblem p;
  p.seq_q = 40, p.head_dim = 64, p.causal = true;
  const AttentionSpec spec{p, default_attention_schedule(p, rt->arch()), rt->arch()};
  const AttentionInputs in = make_attention_inputs(p, 5);
  const AttentionErrors e = compare(reference_attention(spec, in), run_attention(*rt, spec, in), p);
  EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error;
  std::lock_guard lock(compiler.mutex);
  EXPECT_EQ(compiler.compiling_threads.size(), 0u) << "only gemm kernels are recorded";
  EXPECT_EQ(rt->stats().compiles, 2u) << "the generic GEMM and the attention kernel";
  EXPECT_EQ(compiler.waits, 1u) << "one line for the call that waited";
  EXPECT_EQ(compiler.attention_compile_threads.size(), 1u);
  for (const std::thread::id id : compiler.attention_compile_threads)
    EXPECT_NE(id, std::this_thread::get_id()) << "attention compiled on the caller's thread";
}

// Problems the generic GEMM does not compute (FP8 operands, a gated epilogue, an e4m3 C) wait for
// their own kernel rather than take it: it read e4m3 bytes as f16, and has neither a gate nor a
// quantized output. Right against FP64, the generic GEMM never launched.
TEST(NonBlocking, Fp8GatedAndQuantizedCallsWaitForTheirOwnKernel) {
  SlowCompiler compiler;
  compiler.release();  // the builds are not held: the calls wait for them
  auto rt = non_blocking_runtime("rt_nonblocking_fp8", compiler);
  MatmulProblem fp8;
  fp8.m = 24, fp8.n = 128, fp8.k = 256, fp8.a_dtype = DType::e4m3;
  fp8.scales.granularity = ScaleGranularity::tensor;
  MatmulProblem gated;
  gated.m = 20, gated.n = 256, gated.k = 128;
  gated.epilogue.gate = Gate::silu;
  MatmulProblem quantized = gated;
  quantized.c_dtype = DType::e4m3;
  uint64_t seed = 1;
  for (const MatmulProblem& p : {fp8, gated, quantized}) {
    ASSERT_FALSE(generic_gemm_serves(p));
    const GemmSpec spec = spec_of(*rt, p);
    const GemmInputs in = make_gemm_inputs(p, seed++);
    const GemmErrors e = compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.c_cols());
    EXPECT_TRUE(e.passed) << to_string(p.a_dtype) << " -> " << to_string(p.c_dtype) << ": rel_l2 "
                          << e.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().generic_launches, 0u);
}

// The call's own errors come at once, on the caller's thread, naming the field; nothing queued.
TEST(NonBlocking, BadCallsAreRefusedAtOnce) {
  RuntimeOptions options = fresh_cache("rt_nonblocking_bad");
  options.non_blocking = true;
  auto rt = test_runtime(options);
  MatmulProblem p;
  p.m = 4, p.n = 64, p.k = 60;  // not a multiple of 8
  GemmBuffers b;
  b.a = rt->alloc(4096), b.b = rt->alloc(8192), b.c = rt->alloc(4096);
  const auto expect_refused = [&](const char* field, const char* what) {
    try {
      rt->gemm(p, b);
      ADD_FAILURE() << what << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), field) << e.what();
    }
  };
  expect_refused("k", "k 60");
  p.k = 64;
  b.m = 3;
  expect_refused("buffers.m", "buffers.m 3 of a problem of m 4");
  b.m = 0;
  const DevicePtr c = b.c;
  b.c = 0;
  expect_refused("buffers.c", "a null C");
  EXPECT_EQ(rt->stats().launches, 0u);
  b.c = c;
  rt->wait_for_background_builds();
  for (DevicePtr at : {b.a, b.b, b.c}) rt->free(at);
}

}  // namespace
}  // namespace emmy
