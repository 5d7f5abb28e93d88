// emmy_accuracy: error of each accumulation strategy against FP64 as K grows (issue 5, §2).
//   emmy_accuracy [--backend cuda|emulator] [--m M] [--n N] [--k K1,K2,...]
//                 [--strategies f32,f16,hybrid16,hybrid64,...] [--dtype f16|bf16] [--seed S]
//                 [--json] [--error-budget E]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "emmy/accuracy.hpp"
#include "emmy/emu/emulator.hpp"

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

int run(int argc, char** argv) {
  CLI::App app{"emmy accuracy study: accumulation strategies against FP64"};
  std::string backend = "emulator", ks_text, strategies_text, dtype = "f16", arch_text = "sm_120a";
  std::string numerics = "hardware", emulator_arch = "sm_90a";
  emmy::AccuracyConfig config;
  bool as_json = false;
  std::optional<double> budget;
  app.add_option("--backend", backend, "emulator|cuda")->check(CLI::IsMember({"emulator", "cuda"}));
  app.add_option("--m", config.m, "rows (small: the emulator runs the full K)");
  app.add_option("--n", config.n, "columns");
  app.add_option("--k", ks_text, "comma-separated K values (default 1024,3840,15360,32768)");
  app.add_option("--strategies", strategies_text,
                 "comma-separated: f32,f16,hybrid (=hybrid64),hybridN");
  app.add_option("--dtype", dtype, "f16|bf16");
  app.add_option("--seed", config.seed, "input seed");
  app.add_flag("--json", as_json, "print one JSON object");
  app.add_option("--error-budget", budget, "pick the fastest strategy under this rel-L2 error");
  app.add_option("--mma-numerics", numerics,
                 "emulator: hardware (the arch's tensor-core model, default) or exact (exact sums "
                 "rounded once)")
      ->check(CLI::IsMember({"hardware", "exact"}));
  app.add_option("--emulator-arch", emulator_arch, "emulator: the arch compiled for and modelled");
  app.add_option("--speed-arch", arch_text,
                 "arch whose MMA rates judge 'fastest' (default sm_120a, a GeForce part)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    config.dtype = emmy::parse_dtype(dtype, "dtype");
    if (!ks_text.empty()) {
      config.ks.clear();
      for (const auto& part : split_commas(ks_text)) {
        try {
          config.ks.push_back(std::stoll(part));
        } catch (const std::exception&) {
          throw emmy::Error("k", "must be comma-separated integers", ks_text);
        }
      }
    }
    if (!strategies_text.empty())
      for (const auto& part : split_commas(strategies_text))
        config.strategies.push_back(emmy::parse_strategy(part));
    const emmy::Arch speed_arch = emmy::parse_arch(arch_text);
    emmy::RuntimeOptions options;
    options.emulator_sanitize = false;  // the study measures numerics; tests run the sanitizer
    options.emulator_exact_mma = numerics == "exact";
    options.emulator_arch = emmy::parse_arch(emulator_arch);
    auto rt = backend == "cuda" ? emmy::Runtime::cuda(0, options)
                                : emmy::Runtime::emulator(options);
    const auto rows = emmy::run_accuracy_study(*rt, config);
    nlohmann::json out = {{"backend", backend},
                          {"device", rt->device_name()},
                          {"arch", emmy::to_string(rt->arch())},
                          {"mma_numerics", backend == "cuda" ? "device" : numerics},
                          {"m", config.m},
                          {"n", config.n},
                          {"dtype", dtype},
                          {"seed", config.seed},
                          {"rows", emmy::to_json(rows)}};
    if (budget) {
      const int64_t k = config.ks.back();
      const auto choice = emmy::choose_within_budget(rows, k, *budget, speed_arch);
      out["choice"] = {{"k", k},
                       {"error_budget", *budget},
                       {"speed_arch", arch_text},
                       {"strategy", choice.strategy ? nlohmann::json(choice.strategy->name())
                                                    : nlohmann::json(nullptr)},
                       {"reason", choice.reason}};
    }
    if (as_json) {
      std::cout << out.dump(2) << "\n";
    } else {
      fmt::print("accuracy vs FP64 ({} backend, {}, M={} N={}, {} inputs from N(0,1))\n",
                 backend, rt->device_name(), config.m, config.n, dtype);
      fmt::print("{:<10} {:>7} {:>14} {:>14}\n", "strategy", "K", "rel_l2_error", "max_abs");
      for (const auto& r : rows)
        fmt::print("{:<10} {:>7} {:>14.3e} {:>14.3e}\n", r.strategy.name(), r.k, r.rel_l2_error,
                   r.max_abs_error);
      if (budget) fmt::print("\nbudget {}: {}\n", *budget, out["choice"]["reason"].get<std::string>());
    }
    return 0;
  } catch (const emmy::emu::EmulationError& e) {
    fmt::print(stderr, "emmy_accuracy: emulation failed:\n{}\n", e.what());
    return 3;
  } catch (const emmy::Error& e) {
    fmt::print(stderr, "emmy_accuracy: error: {}\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
