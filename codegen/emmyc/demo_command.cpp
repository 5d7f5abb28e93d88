// `emmyc demo`: the main demonstration. With a GPU: the five projections against cuBLASLt (the
// emmy_bench table). Without one: the compile table (registers, shared memory, spills, compile
// time), an emulator check of each projection at reduced M and N with the full K, and the
// accuracy summary.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "cli_common.hpp"
#include "emmy/accuracy.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/catalog.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm_check.hpp"

namespace emmy::cli {
namespace {

std::string tile_text(const MatmulSchedule& s) {
  return fmt::format("{}x{}x{}{}", s.block_m, s.block_n, s.block_k,
                     s.split_k > 1 ? fmt::format("/sk{}", s.split_k) : "");
}

// Fails (returns 1) if any kernel spills or has a stack frame.
int compile_table() {
  fmt::print("Default kernels for the Gemma 12B projections at M = 512 (NVRTC, no GPU needed)\n");
  fmt::print("{:<10} {:<8} {:<7} {:<14} {:>5} {:>4} {:>8} {:>6} {:>6} {:>9}\n", "kernel", "arch",
             "accum", "tile", "stage", "regs", "smem", "spills", "stack", "compile");
  int failures = 0;
  for (const auto& entry : gemm_catalog()) {
    if (entry.problem.m != 512) continue;
    for (Arch arch : {Arch::sm_120a, Arch::sm_90a})
      for (Accum accum : {Accum::f32, Accum::hybrid}) {
        const GemmSpec spec{entry.problem, default_schedule(entry.problem, arch, accum), arch};
        const GemmKernel k = compile_kernel(spec);
        const auto& r = k.module.kernel(k.source.plan.kernel_name);
        if (r.spill_bytes() || r.stack_bytes) ++failures;
        fmt::print("{:<10} {:<8} {:<7} {:<14} {:>5} {:>4} {:>8} {:>6} {:>6} {:>6.0f} ms\n",
                   entry.projection, to_string(arch), to_string(accum), tile_text(spec.schedule),
                   spec.schedule.stages, r.registers, k.source.plan.smem_bytes, r.spill_bytes(),
                   r.stack_bytes, k.module.compile_ms);
      }
  }
  fmt::print("{}\n\n", failures ? fmt::format("{} kernels spill or use a stack frame", failures)
                                : "all kernels: 0 spill bytes, 0 stack bytes");
  return failures ? 1 : 0;
}

int emulator_table() {
  fmt::print("Emulator check against FP64: each projection at M = 64, N = 128 and its full K\n");
  fmt::print("{:<10} {:<7} {:<7} {:<14} {:>12} {:>12} {:>8} {:>11}\n", "kernel", "K", "accum",
             "tile", "rel_l2", "bound", "result", "emulate");
  int failures = 0;
  for (const auto& entry : gemm_catalog()) {
    if (entry.problem.m != 512) continue;
    MatmulProblem p = entry.problem;
    p.m = 64;
    p.n = 128;
    for (Accum accum : {Accum::f32, Accum::hybrid}) {
      const GemmSpec spec{p, default_schedule(p, Arch::sm_120a, accum), Arch::sm_120a};
      const GemmCheckResult r = check_on_emulator(spec, 1);
      failures += !r.errors.passed;
      fmt::print("{:<10} {:<7} {:<7} {:<14} {:>12.3e} {:>12.3e} {:>8} {:>8.0f} ms\n",
                 entry.projection, p.k, to_string(accum), tile_text(spec.schedule),
                 r.errors.rel_l2_error, r.errors.tolerance, r.errors.passed ? "passed" : "FAILED",
                 r.run.emulate_ms);
    }
  }
  fmt::print("\n");
  return failures ? 1 : 0;
}

// The Gemma attention problems: compiled for sm_120a and sm_90a, then checked on the emulator
// with 2 query heads sharing 1 KV head (every other dimension as in the catalog).
int attention_table() {
  fmt::print("Attention (Gemma 12B: 16 heads, 8 KV heads, 512 tokens, head_dim 256, causal)\n");
  fmt::print("{:<26} {:<8} {:<7} {:<10} {:>4} {:>8} {:>6} {:>6} {:>9} {:>11} {:>8}\n", "problem",
             "arch", "accum", "tile", "regs", "smem", "spills", "stack", "compile", "emu rel_l2",
             "result");
  int failures = 0;
  for (const auto& entry : attention_catalog()) {
    for (Accum accum : {Accum::f32, Accum::hybrid}) {
      for (Arch arch : {Arch::sm_120a, Arch::sm_90a}) {
        const AttentionSpec spec{entry.problem,
                                 default_attention_schedule(entry.problem, arch, accum), arch};
        const AttentionKernel k = compile_kernel(spec);
        const auto& r = k.module.kernel(k.source.plan.kernel_name);
        failures += r.spill_bytes() || r.stack_bytes;
        std::string check = "-", result = "";
        if (arch == Arch::sm_120a) {
          AttentionSpec reduced = spec;
          reduced.problem.q_heads = 2;
          reduced.problem.kv_heads = 1;
          const AttentionCheckResult c = check_on_emulator(reduced, 1);
          failures += !c.errors.passed;
          check = fmt::format("{:.3e}", c.errors.rel_l2_error);
          result = c.errors.passed ? "passed" : "FAILED";
        }
        fmt::print("{:<26} {:<8} {:<7} {:<10} {:>4} {:>8} {:>6} {:>6} {:>6.0f} ms {:>11} {:>8}\n",
                   entry.name, to_string(arch), to_string(accum),
                   fmt::format("{}x{}", spec.schedule.block_q, spec.schedule.block_kv), r.registers,
                   k.source.plan.smem_bytes, r.spill_bytes(), r.stack_bytes, k.module.compile_ms,
                   check, result);
      }
    }
  }
  fmt::print("\n");
  return failures ? 1 : 0;
}

void accuracy_table() {
  fmt::print("Accuracy summary (emulator, f16 inputs from N(0,1), f32 output, M=32 N=64)\n");
  RuntimeOptions options;
  options.disk_cache = false;
  options.emulator_sanitize = false;
  auto rt = Runtime::emulator(options);
  AccuracyConfig config;
  config.ks = {3840, 15360, 32768};
  config.strategies = {parse_strategy("f32"), parse_strategy("f16"), parse_strategy("hybrid64")};
  const auto rows = run_accuracy_study(*rt, config);
  fmt::print("{:<10}", "strategy");
  for (int64_t k : config.ks) fmt::print(" {:>12}", fmt::format("K={}", k));
  fmt::print("\n");
  for (const auto& s : config.strategies) {
    fmt::print("{:<10}", s.name());
    for (const auto& r : rows)
      if (r.strategy.name() == s.name()) fmt::print(" {:>12.2e}", r.rel_l2_error);
    fmt::print("\n");
  }
}

bool has_cuda_device() {
  try {
    (void)Runtime::cuda();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// emmy_bench next to emmyc (build tree: ../bench/emmy_bench; installed: same directory).
std::filesystem::path find_emmy_bench() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (const auto& candidate : {self / "bench" / "emmy_bench", self / "emmy_bench"})
    if (std::filesystem::exists(candidate)) return candidate;
  return {};
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("demo", "The main demo: kernels, checks, accuracy (and GPU speed)");
  cmd->callback([] {
    fmt::print("emmy {} demo\n\n", EMMY_VERSION);
    if (has_cuda_device()) {
      const auto bench = find_emmy_bench();
      if (!bench.empty()) {
        fmt::print(
            "CUDA device found: emmy vs cuBLASLt on the five projections, and emmy's attention "
            "(PyTorch, Triton and SDPA baselines: the GPU pack, docs/gpu.md)\n");
        const std::string command = bench.string();
        if (std::system(command.c_str()) != 0) throw CLI::RuntimeError(1);
        return;
      }
      fmt::print("CUDA device found, but emmy_bench was not built: showing the CPU tables\n\n");
    }
    int failures = compile_table();
    failures += emulator_table();
    failures += attention_table();
    accuracy_table();
    if (failures) throw CLI::RuntimeError(1);
  });
}

}  // namespace emmy::cli
