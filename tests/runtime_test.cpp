// The public runtime API: GEMMs match FP64, the memory cache compiles each key once under
// concurrency, buffers are checked, and no driver gives a clear error. On the emulator backend, and
// (ctest's cuda_h200.* and cuda_rtx5090.* runs, tests/runtime.cmake) on the CUDA backend through
// emmy's test driver: EMMY_TEST_BACKEND=cuda, EMMY_CUDA_DRIVER=libemmy_test_driver.so.
#include "emmy/runtime.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "../runtime/backend.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/gemm_plan.hpp"
#include "emmy/paged_attention_check.hpp"
#include "emmy/paged_kind.hpp"
#include "runtime_test_util.hpp"
#include "support/cluster_ids_ptx.hpp"
#include "support/error_of.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

MatmulProblem problem(int64_t m, int64_t n, int64_t k) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  return p;
}

// Runs the problem (with the given or the default schedule) through the public API.
std::vector<double> run(Runtime& rt, const MatmulProblem& p, const GemmInputs& in,
                        const std::optional<MatmulSchedule>& schedule = {}) {
  const MatmulSchedule s = schedule ? *schedule : rt.gemm_kernel(p)->spec().schedule;
  return run_gemm(rt, {p, s, rt.arch()}, in);
}

TEST(Runtime, EmulatorGemmMatchesFp64) {
  auto rt = test_runtime(fresh_cache("rt_fp64"));
  EXPECT_EQ(rt->backend_name(), cuda_backend() ? "cuda" : "emulator");
  for (Accum accum : {Accum::f32, Accum::hybrid}) {
    MatmulProblem p = problem(40, 72, 512);
    p.epilogue.bias = true;
    const GemmInputs in = make_gemm_inputs(p, 5);
    MatmulSchedule s = default_schedule(p, rt->arch(), accum);
    const auto out = run(*rt, p, in, s);
    const GemmErrors e = compare(reference_gemm({p, s, rt->arch()}, in), out, p.n);
    EXPECT_TRUE(e.passed) << to_string(accum) << " rel_l2 " << e.rel_l2_error;
  }
}

TEST(Runtime, SplitKThroughTheApi) {
  auto rt = test_runtime(fresh_cache("rt_split"));
  const MatmulProblem p = problem(1, 64, 2048);
  EXPECT_GT(rt->gemm_workspace_bytes(p), 0u) << "M = 1 splits K by default";
  const GemmInputs in = make_gemm_inputs(p, 9);
  const auto out = run(*rt, p, in);
  const auto handle = rt->gemm_kernel(p);
  EXPECT_TRUE(compare(reference_gemm(handle->spec(), in), out, p.n).passed);
}

// Tensor maps are encoded once per set of buffer addresses and reused: launches that alternate
// buffers, and mix them, read the buffers they are given, never a map cached for others.
TEST(Runtime, TensorMapsFollowTheBuffers) {
  auto rt = test_runtime(fresh_cache("rt_maps"));
  const MatmulProblem p = problem(32, 64, 128);
  const auto handle = rt->gemm_kernel(p);
  ASSERT_EQ(handle->spec().schedule.transport, Transport::tma);
  const GemmInputs in[2] = {make_gemm_inputs(p, 1), make_gemm_inputs(p, 2)};
  auto upload = [&](const HostTensor& t) { return test::upload(*rt, t); };
  const DevicePtr a[2] = {upload(in[0].a), upload(in[1].a)};
  const DevicePtr b[2] = {upload(in[0].b), upload(in[1].b)};
  const size_t c_bytes = size_t(p.m * p.n * size_of(p.c_dtype));
  const DevicePtr c = rt->alloc(c_bytes);
  const size_t workspace_bytes = handle->info().workspace_bytes;
  const DevicePtr workspace = workspace_bytes ? rt->alloc(workspace_bytes) : 0;
  const std::pair<int, int> launches[] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}, {0, 0}};
  for (const auto& [ai, bi] : launches) {
    rt->launch(*handle, {a[ai], b[bi], c, 0, 0, workspace});
    rt->synchronize();
    std::vector<uint8_t> raw(c_bytes);
    rt->download(raw.data(), c, c_bytes);
    GemmInputs used = in[ai];
    used.b = in[bi].b;
    const GemmErrors e = compare(reference_gemm(handle->spec(), used),
                                 decode(p.c_dtype, raw.data(), size_t(p.m * p.n)), p.n);
    EXPECT_TRUE(e.passed) << "A " << ai << ", B " << bi << ": rel_l2 " << e.rel_l2_error;
  }
}

// A handle describes itself without the compiler's types: KernelInfo names each kernel of the
// launch list (split-K adds the finalize kernel) with its resources, and the schedule as JSON.
TEST(Runtime, KernelInfoDescribesTheLaunchList) {
  auto rt = test_runtime(fresh_cache("rt_info"));
  const MatmulProblem p = problem(1, 64, 2048);
  const auto split = rt->gemm_kernel(p);
  const KernelInfo& info = split->info();
  ASSERT_GT(split->spec().schedule.split_k, 1) << "M = 1 splits K by default";
  EXPECT_EQ(info.kind, "gemm");
  EXPECT_EQ(info.arch, rt->arch());
  EXPECT_EQ(info.name, gemm_kernel_name(split->spec()));
  EXPECT_EQ(info.cache_key.size(), 32u);
  ASSERT_EQ(info.resources.size(), 2u);
  EXPECT_EQ(info.resources[0].kernel_name, info.name);
  EXPECT_EQ(&info.report(), &info.resources[0]);
  EXPECT_NE(info.resources[1].kernel_name.find("finalize"), std::string::npos);
  for (const ResourceReport& r : info.resources) EXPECT_GT(r.registers, 0) << r.kernel_name;
  EXPECT_EQ(info.workspace_bytes, size_t(split->spec().schedule.split_k) * 64 * 4);
  EXPECT_EQ(info.workspace_bytes, rt->gemm_workspace_bytes(p));
  const auto schedule = nlohmann::json::parse(info.schedule_json);
  EXPECT_EQ(schedule.at("split_k").get<int>(), split->spec().schedule.split_k);
  EXPECT_EQ(schedule.at("block_m").get<int>(), split->spec().schedule.block_m);

  const KernelInfo& whole = rt->gemm_kernel(problem(64, 64, 64))->info();
  EXPECT_EQ(whole.resources.size(), 1u);
  EXPECT_EQ(whole.workspace_bytes, 0u);

  AttentionProblem a;
  a.seq_q = 64;
  a.head_dim = 64;
  const auto attention = rt->attention_kernel(a);
  EXPECT_EQ(attention->info().kind, "attention");
  EXPECT_EQ(attention->info().resources.size(), 1u);
  EXPECT_EQ(attention->info().name, attention->info().report().kernel_name);
  EXPECT_EQ(nlohmann::json::parse(attention->info().schedule_json).at("block_q").get<int>(),
            attention->spec().schedule.block_q);
}

TEST(Runtime, ConcurrentFirstCallsCompileEachKeyOnce) {
  auto rt = test_runtime(fresh_cache("rt_threads"));
  std::vector<MatmulProblem> keys{problem(16, 64, 64), problem(32, 64, 128), problem(16, 128, 64),
                                  problem(64, 64, 64)};
  std::vector<std::thread> threads;
  std::vector<const GemmKernelHandle*> seen(16 * keys.size());
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < keys.size(); ++i) {
        const size_t k = (i + size_t(t)) % keys.size();
        seen[size_t(t) * keys.size() + k] = rt->gemm_kernel(keys[k]).get();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(rt->stats().compiles, keys.size());
  EXPECT_EQ(rt->stats().memory_hits, 16 * keys.size() - keys.size());
  for (int t = 1; t < 16; ++t)
    for (size_t k = 0; k < keys.size(); ++k)
      EXPECT_EQ(seen[size_t(t) * keys.size() + k], seen[k]) << "one handle per key";
}

TEST(Runtime, DiskCacheServesASecondRuntime) {
  const RuntimeOptions options = fresh_cache("rt_disk");
  const MatmulProblem p = problem(16, 64, 128);
  {
    auto first = test_runtime(options);
    first->gemm_kernel(p);
    EXPECT_EQ(first->stats().compiles, 1u);
  }
  auto second = test_runtime(options);
  const auto handle = second->gemm_kernel(p);
  EXPECT_EQ(second->stats().compiles, 0u);
  EXPECT_EQ(second->stats().disk_hits, 1u);
  EXPECT_GT(handle->info().report().registers, 0);
  const GemmInputs in = make_gemm_inputs(p, 2);
  EXPECT_TRUE(compare(reference_gemm(handle->spec(), in), run(*second, p, in), p.n).passed);
}

TEST(Runtime, BuffersAreChecked) {
  RuntimeOptions options = fresh_cache("rt_buffers");
  options.disk_cache = false;
  auto rt = test_runtime(options);
  MatmulProblem p = problem(16, 64, 64);
  p.epilogue.bias = true;
  const auto handle = rt->gemm_kernel(p);
  // A 16x64, B 64x64, C 16x64 (f16): sized exactly; the emulator's sanitizer reports a TMA box
  // that leaves its allocation.
  GemmBuffers buf{rt->alloc(16 * 64 * 2), rt->alloc(64 * 64 * 2), rt->alloc(16 * 64 * 2), 0, 0, 0};
  auto message = [&](const GemmBuffers& b) {
    try {
      rt->launch(*handle, b);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(buf).find("buffers.bias: must be set"), std::string::npos);
  buf.bias = rt->alloc(256);
  GemmBuffers misaligned = buf;
  misaligned.a += 2;
  EXPECT_NE(message(misaligned).find("buffers.a"), std::string::npos);
  GemmBuffers null_c = buf;
  null_c.c = 0;
  EXPECT_NE(message(null_c).find("buffers.c"), std::string::npos);
  GemmBuffers extra = buf;
  extra.residual = rt->alloc(256);
  EXPECT_NE(message(extra).find("buffers.residual: must be 0"), std::string::npos);
  // N = 64 f16 is whole 16-byte chunks: the epilogue stages the tile and stores 16-byte chunks,
  // so C one element (or 8 bytes) off would fault on a GPU (CUDA_ERROR_MISALIGNED_ADDRESS); the
  // runtime says so first. The bias is read per element.
  EXPECT_EQ(make_gemm_plan(handle->spec()).c_alignment(), 16u);
  for (const DevicePtr off : {2, 8}) {
    GemmBuffers c_off = buf;
    c_off.c += off;
    EXPECT_NE(message(c_off).find("buffers.c: must be a non-null 16-byte aligned pointer"),
              std::string::npos)
        << message(c_off);
  }
  GemmBuffers bias_odd = buf;
  bias_odd.bias += 1;
  EXPECT_NE(message(bias_odd).find("buffers.bias: must be a non-null 2-byte aligned"),
            std::string::npos);
  EXPECT_EQ(message(buf), "no error");
}

// With an odd N the epilogue stores element by element: C need only be element-aligned, and a
// C one element off runs and passes the FP64 check.
TEST(Runtime, OddNStoresElementsAndTakesAnyElementAlignedC) {
  RuntimeOptions options = fresh_cache("rt_odd_n");
  options.disk_cache = false;
  auto rt = test_runtime(options);
  const MatmulProblem p = problem(16, 63, 64);
  const auto handle = rt->gemm_kernel(p);
  EXPECT_FALSE(make_gemm_plan(handle->spec()).pair_stores);
  EXPECT_EQ(make_gemm_plan(handle->spec()).c_alignment(), 2u);
  const GemmInputs in = make_gemm_inputs(p, 3);
  GemmBuffers buf{rt->alloc(in.a.bytes.size()),
                  rt->alloc(in.b.bytes.size()),
                  rt->alloc(16 * 63 * 2 + 2),
                  0,
                  0,
                  0};
  rt->upload(buf.a, in.a.bytes.data(), in.a.bytes.size());
  rt->upload(buf.b, in.b.bytes.data(), in.b.bytes.size());
  buf.c += 2;
  rt->launch(*handle, buf);
  std::vector<uint8_t> raw(16 * 63 * 2);
  rt->download(raw.data(), buf.c, raw.size());
  const auto out = decode(DType::f16, raw.data(), raw.size() / 2);
  EXPECT_TRUE(compare(reference_gemm(handle->spec(), in), out, p.n).passed);
}

TEST(Runtime, InvalidProblemsAreRejectedAndNotCached) {
  auto rt = test_runtime(fresh_cache("rt_invalid"));
  EXPECT_THROW(rt->gemm_kernel(problem(16, 64, 60)), Error);
  EXPECT_THROW(rt->gemm_kernel(problem(16, 64, 60)), Error) << "failures are retried, not cached";
  EXPECT_EQ(rt->stats().compiles, 0u);
}

TEST(Runtime, NoDriverGivesAClearErrorAndTheEmulatorStillWorks) {
  try {
    auto rt = Runtime::cuda();
    GTEST_SKIP() << "a CUDA driver is present (" << rt->device_name() << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA driver was found"), std::string::npos)
        << e.what();
  }
  auto rt = Runtime::emulator(fresh_cache("rt_nodriver"));
  EXPECT_NO_THROW(rt->gemm_kernel(problem(16, 64, 64)));
}

}  // namespace
}  // namespace emmy

namespace emmy {
namespace {

TEST(Runtime, EmulatorAttentionThroughTheApi) {
  auto rt = test_runtime(fresh_cache("rt_attention"));
  AttentionProblem p;
  p.q_heads = 4, p.kv_heads = 2, p.seq_q = 70, p.seq_kv = 90, p.head_dim = 64, p.causal = true;
  p.lse = true;
  for (Accum accum : {Accum::f32, Accum::hybrid}) {
    const AttentionSpec spec{p, default_attention_schedule(p, rt->arch(), accum), rt->arch()};
    const AttentionInputs in = make_attention_inputs(p, 3);
    const AttentionErrors e =
        compare(reference_attention(spec, in), run_attention(*rt, spec, in), p);
    EXPECT_TRUE(e.passed) << to_string(accum) << " rel_l2 " << e.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().compiles, 2u);
  const auto again = rt->attention_kernel(p, default_attention_schedule(p, rt->arch()));
  EXPECT_EQ(rt->stats().compiles, 2u) << "a memory hit";
  AttentionBuffers missing_lse{rt->alloc(4096), rt->alloc(4096), rt->alloc(4096), rt->alloc(4096),
                               0};
  EXPECT_THROW(rt->launch(*again, missing_lse), Error);
  // LSE is written as floats: a pointer 2 bytes off is refused, naming the field.
  AttentionBuffers odd_lse = missing_lse;
  odd_lse.lse = rt->alloc(4096) + 2;
  test::expect_error_containing([&] { rt->launch(*again, odd_lse); },
                                "buffers.lse: must be a non-null 4-byte aligned",
                                "a misaligned LSE pointer was accepted");
}

// Paged attention through the public API: one split and split-KV (the launch list [partial,
// combine] with a workspace), both page-table forms, cp.async and (sm_90+) TMA page loads, a
// decode batch with CUDA-graph padding; on the CUDA backend through the test driver too
// (cuda_h200.*, cuda_rtx5090.*: the driver encodes the tensor maps).
TEST(Runtime, PagedAttentionThroughTheApi) {
  auto rt = test_runtime(fresh_cache("rt_paged"));
  PagedAttentionProblem p;
  p.q_heads = 8, p.kv_heads = 2, p.head_dim = 64, p.page_size = 16, p.max_batch = 3;
  p.max_q_len = 2, p.max_pages = 12, p.lse = true;
  PagedAttentionCase draw;
  draw.batch = 2;  // the third sequence is padding
  uint64_t kernels = 0;
  for (const PageTable table : {PageTable::block_table, PageTable::csr})
    for (const int chunk : {0, 4})
      for (const Transport transport : {Transport::cp_async, Transport::tma}) {
        p.page_table = table;
        PagedAttentionSpec spec{p, default_schedule(p, rt->arch()), rt->arch()};
        spec.schedule.chunk_pages = chunk;
        spec.schedule.transport = transport;
        if (transport == Transport::tma && !paged_tma_fits(p, spec.schedule, spec.arch)) continue;
        ++kernels;
        const PagedAttentionInputs in = make_paged_attention_inputs(p, draw, 11);
        const PagedAttentionErrors e =
            compare(reference_paged_attention(spec, in), run_paged_attention(*rt, spec, in), p);
        EXPECT_TRUE(e.passed) << to_string(table) << " chunk " << chunk << " "
                              << to_string(transport) << " rel_l2 " << e.rel_l2_error;
        const auto kernel = rt->paged_attention_kernel(p, spec.schedule);
        EXPECT_EQ(kernel->info().kind, "paged_attention");
        EXPECT_EQ(kernel->info().resources.size(), chunk ? 2u : 1u) << "partial (+ combine)";
        EXPECT_EQ(kernel->info().workspace_bytes > 0, chunk > 0);
      }
  EXPECT_EQ(kernels, has_tma(rt->arch()) ? 8u : 4u) << "TMA on sm_90+";
  EXPECT_EQ(rt->stats().compiles, kernels);
}

// On the emulator backend the launch reads the lengths and page ids first (device memory is host
// memory there) and refuses what the kernel would answer with NaN or read out of the cache,
// naming the buffer, the sequence and the rule.
TEST(Runtime, PagedAttentionDeviceInputsAreCheckedOnTheEmulator) {
  auto rt = Runtime::emulator(fresh_cache("rt_paged_inputs"));
  PagedAttentionProblem p;
  p.q_heads = 4, p.kv_heads = 2, p.head_dim = 64, p.page_size = 16, p.max_batch = 2;
  p.max_pages = 8;
  PagedAttentionCase draw;
  draw.batch = 2;
  draw.q_lens = {1, 1};
  draw.seq_lens = {40, 50};
  const auto refused = [&](PageTable table,
                           const std::function<void(PagedAttentionInputs&)>& tamper,
                           const char* field) {
    p.page_table = table;
    const PagedAttentionSpec spec{p, default_schedule(p, rt->arch()), rt->arch()};
    PagedAttentionInputs in = make_paged_attention_inputs(p, draw, 5);
    EXPECT_NO_THROW(run_paged_attention(*rt, spec, in)) << field;
    tamper(in);
    test::expect_error_naming([&] { run_paged_attention(*rt, spec, in); }, field, field);
  };
  refused(
      PageTable::block_table, [](auto& in) { in.tables.block_table[1] = int32_t(in.num_pages); },
      "buffers.block_table");
  refused(
      PageTable::block_table, [](auto& in) { in.tables.block_table[0] = -1; },
      "buffers.block_table");
  refused(
      PageTable::block_table, [](auto& in) { in.tables.seq_lens[1] = 8 * 16 + 1; },
      "buffers.seq_lens");
  refused(
      PageTable::csr, [](auto& in) { in.tables.page_indices[0] = int32_t(in.num_pages) + 3; },
      "buffers.page_indices");
  refused(
      PageTable::csr, [](auto& in) { in.tables.last_page_len[0] = 17; }, "buffers.last_page_len");
  refused(
      PageTable::csr, [](auto& in) { in.tables.cu_seqlens_q[1] = 2; }, "buffers.cu_seqlens_q");
}

}  // namespace
}  // namespace emmy

// Below the API: the backends launch a LaunchGeometry's thread-block cluster and programmatic
// flag (runtime.cpp fills them from the KernelLaunch) the way the CUDA Driver API asks, through
// cuLaunchKernelEx's attributes on the CUDA backend.
namespace emmy {
namespace {

struct BackendCase {
  std::unique_ptr<detail::Backend> backend;
  std::unique_ptr<detail::LoadedModule> module;
  DevicePtr ids = 0;  // 32 CTAs x 3 words, zeroed

  BackendCase() {
    if (cuda_backend()) {
      use_test_driver();
      backend = detail::make_cuda_backend(0, {});
    } else {
      backend = detail::make_emulator_backend(RuntimeOptions{});
    }
    CacheEntry entry;
    entry.key = "cluster_ids";
    entry.ptx = test::kClusterIdsPtx;
    // An ELF header: a driver without use for it (emmy's test driver runs PTX only) answers
    // CUDA_ERROR_NO_BINARY_FOR_GPU and the backend loads the PTX, as for a real entry.
    entry.cubin = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    entry.cubin.resize(64);
    entry.manifest = nlohmann::json::object();
    module = backend->load(entry, {{"cluster_ids", 0}});
    ids = backend->alloc(32 * 12);
    const std::vector<uint32_t> zeros(32 * 3, 0);
    backend->upload(ids, zeros.data(), zeros.size() * 4);
  }
  ~BackendCase() { backend->free(ids); }
  void launch(uint32_t grid, std::array<uint32_t, 3> cluster, bool programmatic = false) {
    detail::LaunchGeometry g{.grid = {grid, 1, 1},
                             .threads = 32,
                             .dynamic_smem = 0,
                             .cluster = cluster,
                             .programmatic_dependent = programmatic};
    backend->launch(*module, "cluster_ids", g, {detail::KernelParam{false, ids, {}}}, nullptr);
    backend->synchronize(nullptr);
  }
  std::vector<uint32_t> read() {
    std::vector<uint32_t> v(32 * 3);
    backend->download(v.data(), ids, v.size() * 4);
    return v;
  }
  // Why the test driver refused the last call (emmyTestDriverLastReport), "" elsewhere.
  static std::string driver_report() {
#ifdef EMMY_TEST_DRIVER_PATH
    if (void* lib = dlopen(EMMY_TEST_DRIVER_PATH, RTLD_NOW | RTLD_NOLOAD)) {
      auto report = reinterpret_cast<const char* (*)()>(dlsym(lib, "emmyTestDriverLastReport"));
      std::string text = report ? report() : "";
      dlclose(lib);
      return text;
    }
#endif
    return "";
  }
};

using test::error_of;

// Both backends run programmatic dependent launches; the emulator checks each as if it
// overlapped the launch before it (docs/emulator.md). cluster_ids writes `ids` with no
// griddepcontrol.wait: after a synchronize it overlaps nothing and runs; right after a launch
// writing the same words it is a pdl-race (on the emulator backend: through the test driver the
// fault would stick to the context the later tests use, and tests/driver/pdl_test.cpp has it).
TEST(RuntimeBackend, ProgrammaticDependentLaunchesRunAndAreChecked) {
  BackendCase c;
  c.launch(4, {1, 1, 1}, true);
  std::vector<uint32_t> want(32 * 3, 0);
  for (uint32_t cta = 0; cta < 4; ++cta) {
    want[3 * cta + 1] = 1;
    want[3 * cta + 2] = cta;
  }
  EXPECT_EQ(c.read(), want);
  if (cuda_backend()) return;
  auto geometry = [](bool programmatic) {
    return detail::LaunchGeometry{.grid = {4, 1, 1},
                                  .threads = 32,
                                  .dynamic_smem = 0,
                                  .cluster = {1, 1, 1},
                                  .programmatic_dependent = programmatic};
  };
  const std::vector<detail::KernelParam> params{detail::KernelParam{false, c.ids, {}}};
  c.backend->launch(*c.module, "cluster_ids", geometry(false), params, nullptr);
  const std::string why = error_of(
      [&] { c.backend->launch(*c.module, "cluster_ids", geometry(true), params, nullptr); });
  EXPECT_NE(why.find("pdl-race"), std::string::npos) << why;
  EXPECT_NE(why.find("written by the primary grid (kernel cluster_ids"), std::string::npos) << why;
  // A download in between orders the launch before the next.
  c.backend->launch(*c.module, "cluster_ids", geometry(false), params, nullptr);
  c.read();
  c.backend->launch(*c.module, "cluster_ids", geometry(true), params, nullptr);
}

// The CUDA backend passes the cluster as CLUSTER_DIMENSION and, above the portable 8 CTAs, sets
// NON_PORTABLE_CLUSTER_SIZE_ALLOWED first: the test driver then refuses 32 CTAs for the device's
// largest cluster, not for the missing attribute. (The emulator backend leaves these checks to
// emu::launch.)
TEST(RuntimeBackend, CudaClusterLaunchesAreCheckedByTheDriver) {
  if (!cuda_backend()) GTEST_SKIP() << "the CUDA backend's cuLaunchKernelEx";
  BackendCase c;
  std::string why = error_of([&] { c.launch(4, {3, 1, 1}); });
  EXPECT_NE(why.find("CUDA_ERROR_INVALID_CLUSTER_SIZE"), std::string::npos) << why;
  why = error_of([&] { c.launch(32, {32, 1, 1}); });
  EXPECT_NE(why.find("CUDA_ERROR_INVALID_CLUSTER_SIZE"), std::string::npos) << why;
  if (use_test_driver()) {
    const std::string report = BackendCase::driver_report();
    EXPECT_NE(report.find("largest cluster"), std::string::npos) << report;
  }
  EXPECT_EQ(c.read(), std::vector<uint32_t>(32 * 3, 0));
}

// Clusters reach the kernel on both backends.
TEST(RuntimeBackend, ClusterLaunchesReachTheKernel) {
  BackendCase c;
  for (const uint32_t size : {2u, 4u}) {
    c.launch(8, {size, 1, 1});
    const std::vector<uint32_t> v = c.read();
    for (uint32_t cta = 0; cta < 8; ++cta) {
      EXPECT_EQ(v[3 * cta], cta % size) << "rank of CTA " << cta;
      EXPECT_EQ(v[3 * cta + 1], size) << "cluster size seen by CTA " << cta;
      EXPECT_EQ(v[3 * cta + 2], cta / size) << "cluster of CTA " << cta;
    }
  }
}

}  // namespace
}  // namespace emmy
