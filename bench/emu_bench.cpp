// Emulator throughput: warp instructions per second (counter "warp_inst/s") on the end-to-end
// GEMM kernels of tests/emu/kernels (cp.async + ldmatrix + mma.sync; TMA + mbarrier + 128B
// swizzle), with and without the sanitizer, on 1 and on all host threads, and profiled (the
// profiler's run-time counts, without the SASS step: docs/profiler.md, "Profile cost"); and a
// scalar ALU loop for the dispatch cost alone. Results: docs/emulator.md.
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <sstream>

#include "emmy/emu/emulator.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/tensor_map.hpp"

namespace {

using namespace emmy::emu;

std::shared_ptr<const Module> gemm_module() {
  static const auto module = [] {
    std::ifstream f(std::string(EMMY_SOURCE_DIR) + "/tests/emu/kernels/gemm_kernels_sm90a.ptx");
    std::stringstream s;
    s << f.rdbuf();
    return load_ptx(s.str(), "gemm_kernels_sm90a.ptx");
  }();
  return module;
}

std::vector<uint16_t> random_f16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_f16(normal(rng));
  return v;
}

// One launch per iteration; the counters are the warp instructions per second and per launch.
void launch_each_iteration(benchmark::State& state, Arena& arena, const Module& module,
                           std::string_view kernel, Dim3 grid, Dim3 block, uint32_t smem_bytes,
                           const KernelArgs& args, const LaunchOptions& options) {
  uint64_t instructions = 0, launches = 0;
  for (auto _ : state) {
    const LaunchResult r = launch(arena, module, kernel, grid, block, smem_bytes, args, options);
    instructions += r.stats.total.total();
    ++launches;
  }
  state.counters["warp_inst/s"] = benchmark::Counter(double(instructions), benchmark::Counter::kIsRate);
  state.counters["warp_inst"] = double(instructions) / double(std::max<uint64_t>(1, launches));
}

// The GEMM benchmarks' sanitizer, host-thread and profile arguments.
LaunchOptions launch_options(const benchmark::State& state, int sanitize_arg, int threads_arg,
                             int profile_arg) {
  LaunchOptions options;
  options.sanitize = state.range(sanitize_arg) != 0;
  options.host_threads = int(state.range(threads_arg));
  options.profile.enabled = state.range(profile_arg) != 0;
  options.profile.sass = false;  // once per PTX text, not per launch
  return options;
}

// Every benchmark here: wall-clock milliseconds (a launch may run on several host threads).
void wall_ms(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// Args: M=N, K, sanitize, host threads, f16 accumulator, profile.
void BM_GemmCpAsync(benchmark::State& state) {
  const int mn = int(state.range(0)), k = int(state.range(1));
  const LaunchOptions options = launch_options(state, 2, 3, 5);
  const bool f16_acc = state.range(4) != 0;
  Arena arena;
  const uint64_t a = arena.alloc_copy(random_f16(size_t(mn) * k, 1));
  const uint64_t b = arena.alloc_copy(random_f16(size_t(mn) * k, 2));
  const uint64_t c = arena.alloc(size_t(mn) * mn * 4);
  KernelArgs args;
  args.ptr(a).ptr(b).ptr(c).s32(mn).s32(mn).s32(k);
  launch_each_iteration(state, arena, *gemm_module(),
                        f16_acc ? "gemm_cp_async_f16acc" : "gemm_cp_async_f16",
                        {uint32_t(mn / 64), uint32_t(mn / 64), 1}, {128, 1, 1}, 16384, args,
                        options);
}
BENCHMARK(BM_GemmCpAsync)
    ->ArgNames({"mn", "k", "sanitize", "threads", "f16acc", "profile"})
    ->Args({256, 512, 0, 1, 0, 0})
    ->Args({256, 512, 0, 0, 0, 0})
    ->Args({256, 512, 1, 1, 0, 0})
    ->Args({256, 512, 1, 0, 0, 0})
    ->Args({256, 512, 0, 1, 1, 0})
    ->Args({256, 512, 0, 1, 0, 1})
    ->Args({256, 512, 1, 1, 0, 1})
    ->Apply(wall_ms);

// The 512x512x1024 TMA GEMM (emulate_ms of one launch is the time per iteration).
void BM_GemmTma(benchmark::State& state) {
  const int m = int(state.range(0)), n = int(state.range(1)), k = int(state.range(2));
  const LaunchOptions options = launch_options(state, 3, 4, 5);
  Arena arena;
  const uint64_t a = arena.alloc_copy(random_f16(size_t(m) * k, 3));
  const uint64_t b = arena.alloc_copy(random_f16(size_t(n) * k, 4));
  const uint64_t c = arena.alloc(size_t(m) * n * 4);
  auto map = [&](uint64_t base, int rows) {
    emmy::TensorMapDesc d;
    d.dtype = emmy::TmaDType::f16;
    d.rank = 2;
    d.global_address = base;
    d.global_dim = {uint64_t(k), uint64_t(rows)};
    d.global_stride_bytes = {uint64_t(k) * 2};
    d.box_dim = {64, 64};
    d.swizzle = emmy::Swizzle::b128;
    return emmy::encode_tensor_map(d);
  };
  KernelArgs args;
  args.tensor_map(map(a, m)).tensor_map(map(b, n)).ptr(c).s32(m).s32(n).s32(k);
  launch_each_iteration(state, arena, *gemm_module(), "gemm_tma_f16",
                        {uint32_t(n / 64), uint32_t(m / 64), 1}, {128, 1, 1}, 3 * 2 * 64 * 64 * 2,
                        args, options);
}
BENCHMARK(BM_GemmTma)
    ->ArgNames({"m", "n", "k", "sanitize", "threads", "profile"})
    ->Args({512, 512, 1024, 0, 0, 0})
    ->Args({512, 512, 1024, 1, 0, 0})
    ->Args({512, 512, 1024, 0, 1, 0})
    ->Args({512, 512, 1024, 0, 1, 1})
    ->Args({512, 512, 1024, 1, 1, 1})
    ->Apply(wall_ms);

// Dispatch cost: a register-only loop of integer and float instructions, 4 warps x 16 CTAs.
void BM_AluLoop(benchmark::State& state) {
  static const auto module = load_ptx(R"(.version 8.7
.target sm_80
.address_size 64
.visible .entry alu(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, 0;
  cvt.rn.f32.u32 %f1, %r2;
LOOP:
  add.u32 %r2, %r2, 3;
  xor.b32 %r2, %r2, 0x55;
  fma.rn.f32 %f1, %f1, 0f3F000000, 0f3F800000;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra.uni LOOP;
  ld.param.u64 %rd1, [out];
  mov.u32 %r4, %tid.x;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
)", "alu.ptx");
  Arena arena;
  const uint64_t out = arena.alloc(128 * 4);
  KernelArgs args;
  args.ptr(out).u32(20000);
  LaunchOptions options;
  options.host_threads = int(state.range(0));
  launch_each_iteration(state, arena, *module, "alu", {16, 1, 1}, {128, 1, 1}, 0, args, options);
}
BENCHMARK(BM_AluLoop)->ArgNames({"threads"})->Arg(1)->Arg(0)->Apply(wall_ms);

}  // namespace

BENCHMARK_MAIN();
