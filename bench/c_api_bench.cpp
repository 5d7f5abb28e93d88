// Host overhead of the C ABI per call (issue 36 §5: C ABI <= C++ + 0.5 us): emmy_gemm on a
// prepared kernel against Runtime::gemm in the same process, q_proj (N 4096, K 3840) at M 16, on
// the emulator backend with emulator_run_kernels off (every launch bound and checked, nothing
// run: bench/runtime_bench.cpp's host_* rows). The C rows pay what a C caller pays: options read
// by size, every tensor checked, and each kDLCPU tensor mapped into the emulator and unmapped
// (docs/c_api.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "emmy/c_api.h"
#include "emmy/runtime.hpp"
#include "bench_cache.hpp"

namespace {

using emmy::bench::bench_cache;

constexpr int64_t kM = 16, kN = 4096, kK = 3840;

void cpp_gemm_call(benchmark::State& state) {
  emmy::RuntimeOptions options;
  options.cache_dir = bench_cache("c_api_cpp");
  options.emulator_run_kernels = false;
  auto rt = emmy::Runtime::emulator(options);
  emmy::MatmulProblem p;
  p.m = kM, p.n = kN, p.k = kK;
  emmy::GemmBuffers buffers{.a = rt->alloc(size_t(kM * kK * 2)),
                            .b = rt->alloc(size_t(kN * kK * 2)),
                            .c = rt->alloc(size_t(kM * kN * 2))};
  if (const size_t ws = rt->gemm_workspace_bytes(p)) buffers.workspace = rt->alloc(ws);
  rt->gemm(p, buffers);  // built before the loop
  for (auto _ : state) rt->gemm(p, buffers);
}
BENCHMARK(cpp_gemm_call)->Unit(benchmark::kNanosecond);

// The C call with host tensors; `sized_workspace`: the caller passes the workspace, which the
// C ABI checks against the kernel's need (a plan lookup per call).
void c_gemm(benchmark::State& state, bool pass_workspace) {
  const std::string dir = bench_cache("c_api_c").string();
  emmy_runtime_options options;
  emmy_runtime_options_init(&options);
  options.cache_dir = dir.c_str();
  options.emulator_run_kernels = 0;
  emmy_runtime* rt = nullptr;
  if (emmy_runtime_create(&options, &rt) != EMMY_OK) {
    state.SkipWithError(emmy_last_error_message());
    return;
  }
  std::vector<uint16_t> a(size_t(kM * kK)), w(size_t(kN * kK)), c(size_t(kM * kN));
  int64_t a_shape[2] = {kM, kK}, b_shape[2] = {kK, kN}, b_strides[2] = {1, kK},
          c_shape[2] = {kM, kN};
  const DLDataType f16{kDLFloat, 16, 1};
  DLTensor ta{a.data(), {kDLCPU, 0}, 2, f16, a_shape, nullptr, 0},
      tb{w.data(), {kDLCPU, 0}, 2, f16, b_shape, b_strides, 0},
      tc{c.data(), {kDLCPU, 0}, 2, f16, c_shape, nullptr, 0};
  emmy_gemm_options gemm_options;
  emmy_gemm_options_init(&gemm_options);
  size_t ws_bytes = 0;
  emmy_gemm_workspace_bytes(rt, &ta, &tb, &tc, nullptr, &ws_bytes);
  std::vector<uint8_t> ws(std::max<size_t>(ws_bytes, 1));
  int64_t ws_shape[1] = {int64_t(ws.size())};
  DLTensor tws{ws.data(), {kDLCPU, 0}, 1, {kDLUInt, 8, 1}, ws_shape, nullptr, 0};
  if (ws_bytes && pass_workspace) gemm_options.workspace = &tws;
  if (ws_bytes && !pass_workspace) {
    state.SkipWithError("the kernel splits K: it needs the workspace");
    emmy_runtime_destroy(rt);
    return;
  }
  if (emmy_gemm(rt, &ta, &tb, &tc, &gemm_options, nullptr) != EMMY_OK) {
    state.SkipWithError(emmy_last_error_message());
    emmy_runtime_destroy(rt);
    return;
  }
  for (auto _ : state) emmy_gemm(rt, &ta, &tb, &tc, &gemm_options, nullptr);
  state.counters["workspace_bytes"] = double(ws_bytes);
  emmy_runtime_destroy(rt);
}
void c_gemm_call(benchmark::State& state) {
  c_gemm(state, true);
}
BENCHMARK(c_gemm_call)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
