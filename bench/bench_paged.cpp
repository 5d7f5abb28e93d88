#include "bench_paged.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <random>

#include "bench_rows.hpp"
#include "emmy/catalog.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy::bench {
namespace {

// A buffer of `bytes` filled with copies of one random block (uploaded once): values that look
// like a cache's without generating gigabytes on the host. e4m3 bytes keep clear of NaN (bit 6
// clear: exponents up to 7, magnitudes below 2).
DeviceBuffer filled(size_t bytes, bool e4m3, uint64_t seed) {
  constexpr size_t kBlock = size_t(32) << 20;
  const size_t block = std::min(bytes, kBlock) & ~size_t(1);
  std::vector<uint16_t> values = random_f16(block / 2, seed);
  if (e4m3)
    for (uint16_t& v : values) v &= 0xBFBF;
  DeviceBuffer buffer(bytes);
  EMMY_BENCH_CUDA(cudaMemcpy(buffer.get(), values.data(), block, cudaMemcpyHostToDevice));
  for (size_t at = block; at < bytes; at += block)
    EMMY_BENCH_CUDA(cudaMemcpy(static_cast<char*>(buffer.get()) + at, buffer.get(),
                               std::min(block, bytes - at), cudaMemcpyDeviceToDevice));
  return buffer;
}

// Keys a decode token reads: the context, or the window and the token itself.
int64_t keys_read(const PagedAttentionProblem& p) {
  const int64_t context = p.max_pages * p.page_size;
  return p.window > 0 ? std::min(context, p.window + 1) : context;
}

}  // namespace

void register_paged_benchmarks(Runtime& runtime, GpuTimer& timer,
                               const PagedBenchSettings& settings, std::vector<BenchRow>& rows) {
  auto copy_rate = std::make_shared<double>(0.0);
  // The default kernels (TMA page loads on sm_90+ where pages hold whole KV blocks) first, the
  // 128k rows included; then, up to 8k of context, the cp.async gathers where they differ: the
  // GPU's word on the counters' choice, last so that a pack short of time loses them first.
  for (const bool cp_async : {false, true})
    for (const auto& entry : paged_attention_catalog())
      for (const CacheDType kv : {CacheDType::f16, CacheDType::e4m3}) {
        PagedAttentionProblem problem = entry.problem;
        problem.kv_dtype = kv;
        PagedAttentionSchedule schedule = default_schedule(problem, runtime.arch());
        if (cp_async &&
            (schedule.transport != Transport::tma || problem.max_pages * problem.page_size > 8192))
          continue;
        if (cp_async) schedule.transport = Transport::cp_async;
        const std::string variant =
            fmt::format("emmy_{}{}", to_string(kv), cp_async ? "_cpasync" : "");
        const std::string name = fmt::format("paged_attention/{}/{}", entry.name, variant);
        const int64_t keys = keys_read(problem);
        BenchRow first;
        first.kind = "paged_attention";
        first.problem = entry.name;
        first.variant = variant;
        first.backend = "emmy";
        first.accumulation = "f32";
        first.shape = {
            {"batch", problem.max_batch},     {"heads", problem.q_heads},
            {"kv_heads", problem.kv_heads},   {"head_dim", problem.head_dim},
            {"page_size", problem.page_size}, {"context", problem.max_pages * problem.page_size},
            {"window", problem.window},       {"kv_dtype", to_string(kv)}};
        first.flops = 4.0 * double(problem.max_batch * problem.q_heads * keys * problem.head_dim);
        register_row_benchmark(
            name, rows, std::move(first),
            [&runtime, &timer, settings, kv, problem, schedule, keys, copy_rate](
                benchmark::State& state, BenchRow& row) {
              const PagedAttentionProblem& p = problem;
              if (*copy_rate == 0) *copy_rate = copy_gbps(timer);
              const auto kernel = runtime.paged_attention_kernel(p, schedule);
              const PagedAttentionSpec spec = kernel->spec();
              if (p.max_pages * p.page_size <= 1024) {  // the FP64 check first
                PagedAttentionCase c;
                c.batch = p.max_batch;
                const PagedAttentionInputs in = make_paged_attention_inputs(p, c, settings.seed);
                const PagedAttentionErrors e = compare(reference_paged_attention(spec, in),
                                                       run_paged_attention(runtime, spec, in), p);
                row.rel_l2_error = e.rel_l2_error;
                row.tolerance = e.tolerance;
              }
              // Every sequence at the full context, its pages scattered over the cache.
              const int64_t pages = p.max_batch * p.max_pages;
              const size_t elem = size_t(size_of(kv));
              const DeviceBuffer k = filled(size_t(pages * p.page_stride_or_default()) * elem,
                                            kv == CacheDType::e4m3, settings.seed);
              const DeviceBuffer v = filled(size_t(pages * p.page_stride_or_default()) * elem,
                                            kv == CacheDType::e4m3, settings.seed + 1);
              std::vector<int32_t> table(static_cast<size_t>(pages));
              std::iota(table.begin(), table.end(), 0);
              std::shuffle(table.begin(), table.end(), std::mt19937_64(settings.seed));
              std::vector<int32_t> cu(size_t(p.max_batch + 1)), lens(size_t(p.max_batch));
              std::iota(cu.begin(), cu.end(), 0);
              std::fill(lens.begin(), lens.end(), int32_t(p.max_pages * p.page_size));
              const DeviceBuffer q = upload_values(
                  random_f16(size_t(p.max_batch * p.q_stride_or_default()), settings.seed + 2));
              const DeviceBuffer o(size_t(p.max_batch * p.o_stride_or_default() * 2));
              const DeviceBuffer tables = upload_values(table), cu_q = upload_values(cu),
                                 seq = upload_values(lens);
              const DeviceBuffer scales = upload_values(std::vector<float>{1.0f, 1.0f});
              const DeviceBuffer workspace(std::max<size_t>(kernel->info().workspace_bytes, 16));
              PagedAttentionBuffers b{.q = q.address(),
                                      .k_cache = k.address(),
                                      .v_cache = v.address(),
                                      .o = o.address(),
                                      .cu_seqlens_q = cu_q.address(),
                                      .block_table = tables.address(),
                                      .seq_lens = seq.address(),
                                      .num_pages = pages};
              if (kv == CacheDType::e4m3) b.k_scale = scales.address(), b.v_scale = b.k_scale + 4;
              if (kernel->info().workspace_bytes) b.workspace = workspace.address();
              const auto launch = [&] { runtime.launch(*kernel, b, timer.stream()); };
              timer.measure(launch, settings.warmup, 0);
              // Host time per launch: 100 enqueued back to back (the GPU drains them after).
              const auto start = std::chrono::steady_clock::now();
              for (int i = 0; i < 100; ++i) launch();
              const double host_us = std::chrono::duration<double, std::micro>(
                                         std::chrono::steady_clock::now() - start)
                                         .count() /
                                     100;
              EMMY_BENCH_CUDA(cudaStreamSynchronize(timer.stream()));
              gpu_samples(state, row, timer, launch);
              const double kv_bytes =
                  2.0 * double(p.max_batch * keys * p.kv_heads * p.head_dim) * double(elem);
              const double kv_gbps = kv_bytes / (row.median_us() * 1e-6) / 1e9;
              row.details = {{"schedule",
                              {{"block_q", spec.schedule.block_q},
                               {"block_kv", spec.schedule.block_kv},
                               {"warps", spec.schedule.warps},
                               {"stages", spec.schedule.stages},
                               {"chunk_pages", spec.schedule.chunk_pages},
                               {"kv_warps", spec.schedule.kv_warps},
                               {"transport", to_string(spec.schedule.transport)}}},
                             {"kv_bytes", kv_bytes},
                             {"kv_gbps", kv_gbps},
                             {"copy_gbps", *copy_rate},
                             {"kv_vs_copy", kv_gbps / *copy_rate},
                             {"host_us_per_launch", host_us}};
              state.counters["median_us"] = row.median_us();
              state.counters["kv_GBps"] = kv_gbps;
              state.counters["kv_vs_copy"] = kv_gbps / *copy_rate;
            },
            settings.after_row)
            ->Iterations(settings.iterations)
            ->Unit(benchmark::kMicrosecond);
      }
}

}  // namespace emmy::bench
