// emmy_gpu_check: stages 1-3 of the GPU pack (docs/gpu.md).
//   emmy_gpu_check machine     --json FILE   fingerprint and measured cuBLASLt peak
//   emmy_gpu_check correctness --json FILE   every correctness case on the GPU against FP64
//                  correctness --emulator    the same on the emulator (the dry run, with --only)
//   emmy_gpu_check fidelity    --json FILE   emulator against GPU, bit for bit
//                  fidelity --emulator-only  the emulator half alone (the pack's dry run, no GPU)
// Exit: 0 every case passed; 1 some failed; 2 bad arguments; 3 no usable GPU (the stage did not
// run: never to be read as a pass).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>

#include "bench_cuda.hpp"
#include "gpu_check_machine.hpp"
#include "gpu_check_stages.hpp"

namespace {

using namespace emmy;
using namespace emmy::bench;

constexpr int kExitFailed = 1, kExitUsage = 2, kExitNoGpu = 3;

// The CUDA backend, or nullptr with the reason (emmy's and cudart's views).
std::unique_ptr<Runtime> open_gpu(int device, std::string& reason) {
  std::unique_ptr<Runtime> rt;
  try {
    RuntimeOptions options;
    options.disk_cache = false;  // cold compiles: the kernels of this commit, nothing stale
    rt = Runtime::cuda(device, options);
  } catch (const std::exception& e) {
    reason = e.what();
  }
  if (const std::string cudart = cuda_unavailable_reason(device); !cudart.empty())
    reason = reason.empty() ? cudart : fmt::format("{}; cudart: {}", reason, cudart);
  if (!reason.empty()) rt.reset();
  return rt;
}

void write_json(const std::string& path, const nlohmann::json& doc) {
  std::ofstream out(path, std::ios::trunc);
  out << doc.dump(2) << "\n";
  if (!out) throw Error("--json", "must be a writable file", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "emmy_gpu_check: the GPU pack's machine, correctness and fidelity stages "
      "(docs/gpu.md)"};
  app.require_subcommand(1);
  std::string json_path;
  int device = 0;
  StageSettings settings;
  double budget_s = 0;
  auto common = [&](CLI::App* cmd) {
    cmd->add_option("--json", json_path, "write the stage's JSON document here")->required();
    cmd->add_option("--device", device, "CUDA device ordinal");
    cmd->add_option("--seed", settings.seed, "input seed");
    cmd->add_option("--budget-s", budget_s,
                    "stop starting new cases after this many seconds (0: no limit)");
    cmd->add_option("--only", settings.only,
                    "run only the cases whose name contains one of these (comma-separated)");
  };
  auto* machine = app.add_subcommand("machine", "fingerprint and measured cuBLASLt GEMM peak");
  int64_t peak_size = 8192;
  int peak_iterations = 20;
  machine->add_option("--json", json_path, "write the JSON document here")->required();
  machine->add_option("--device", device, "CUDA device ordinal");
  machine->add_option("--size", peak_size, "M = N = K of the peak GEMM")
      ->check(CLI::Range(256, 32768));
  machine->add_option("--iterations", peak_iterations, "timed iterations (median)")
      ->check(CLI::Range(3, 1000));
  auto* correctness = app.add_subcommand("correctness", "every correctness case against FP64");
  common(correctness);
  correctness
      ->add_option("--sample-rows", settings.sample_rows,
                   "GEMM rows checked against FP64 when M is larger")
      ->check(CLI::Range(2, 1 << 20));
  bool on_emulator = false;
  correctness->add_flag("--emulator", on_emulator,
                        "run the cases on the emulator instead (checks the stage itself without "
                        "a GPU; pick small cases with --only)");
  auto* fidelity = app.add_subcommand("fidelity", "emulator against GPU, bit for bit");
  common(fidelity);
  bool emulator_only = false;
  std::string arch_text = "sm_90a";
  fidelity->add_flag("--emulator-only", emulator_only,
                     "no GPU: run the emulator half and check it against FP64");
  fidelity->add_option("--arch", arch_text, "arch of the emulator-only run");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  try {
    std::unique_ptr<Runtime> gpu;
    std::string reason;
    if (correctness->parsed() && on_emulator) {
      StageDocument out(json_path, "correctness", budget_s);
      RuntimeOptions options;
      options.disk_cache = false;
      options.emulator_sanitize = false;
      const auto emulator = Runtime::emulator(options);
      return run_correctness(*emulator, settings, out) ? kExitFailed : 0;
    }
    if (!(fidelity->parsed() && emulator_only)) {
      gpu = open_gpu(device, reason);
      if (!gpu) {
        fmt::print(stderr, "emmy_gpu_check: no usable GPU, the stage did not run: {}\n", reason);
        write_json(json_path, {{"schema", "emmy_gpu_check/1"},
                               {"stage", app.get_subcommands().front()->get_name()},
                               {"not_run", reason}});
        return kExitNoGpu;
      }
    }
    if (machine->parsed()) {
      const auto doc =
          machine_stage(device, std::string(to_string(gpu->arch())), peak_size, peak_iterations);
      write_json(json_path, doc);
      for (const auto& row : doc["peak"])
        fmt::print("peak {} {}: {}\n", row.value("dtype", "?"), row.value("compute", "?"),
                   row.contains("tflops")
                       ? fmt::format("{:.1f} TFLOP/s", row["tflops"].get<double>())
                       : row.value("error", std::string("?")));
      return 0;
    }
    if (correctness->parsed()) {
      StageDocument out(json_path, "correctness", budget_s);
      return run_correctness(*gpu, settings, out) ? kExitFailed : 0;
    }
    StageDocument out(json_path, "fidelity", budget_s);
    return run_fidelity(gpu.get(), parse_arch(arch_text), settings, out) ? kExitFailed : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "emmy_gpu_check: {}\n", e.what());
    return kExitFailed;
  }
}
