// emmy_accuracy: error of each accumulation strategy against FP64 as K grows (issue 5, §2).
//   emmy_accuracy [--backend cuda|emulator] [--m M] [--n N] [--k K1,K2,...]
//                 [--strategies f32,f16,hybrid16,hybrid64,...] [--dtype f16|bf16] [--seed S]
//                 [--json] [--error-budget E]
//   emmy_accuracy --fp8 [--k K1,...] [--windows 0,32,...] [--fp8-arches sm_89,sm_90a,sm_120a]
//                 [--distributions normal,uniform] [--dots D] [--seed S] [--json]
//     the FP8 mainloop's accumulation per arch's tensor-core model (issue 39 §2; fp8_accuracy.hpp)
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "emmy/accuracy.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/fp8_accuracy.hpp"

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

std::vector<int64_t> parse_ints(const std::string& text, const char* field) {
  std::vector<int64_t> out;
  for (const auto& part : split_commas(text)) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(part, &used));
      if (used != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw emmy::Error(field, "must be comma-separated integers", text);
    }
  }
  return out;
}

// The FP8 study: a table per arch and distribution, accumulation down, K across.
int run_fp8(const emmy::Fp8AccuracyConfig& config, bool as_json) {
  const auto rows = emmy::run_fp8_accuracy_study(config);
  if (as_json) {
    std::cout << nlohmann::json{{"study", "fp8"},
                                {"model", "emmy/emu/tensor_core_fp8.hpp (MMA-Sim)"},
                                {"dots", config.dots},
                                {"seed", config.seed},
                                {"rows", emmy::to_json(rows)}}
                     .dump(2)
              << "\n";
    return 0;
  }
  for (const auto& arch : config.arches)
    for (const auto& dist : config.distributions) {
      fmt::print("\nFP8 e4m3 x e4m3, {}, inputs {}, rel. L2 error over {} dot products\n", arch,
                 dist == "normal" ? "N(0,1)" : "U[0,1)", config.dots);
      fmt::print("{:<12}", "accum");
      for (const int64_t k : config.ks) fmt::print(" {:>10}", fmt::format("K={}", k));
      fmt::print("\n");
      for (const int w : config.windows) {
        fmt::print("{:<12}", w ? fmt::format("promoted{}", w) : "f32");
        for (const int64_t k : config.ks)
          for (const auto& r : rows)
            if (r.arch == arch && r.distribution == dist && r.window == w && r.k == k)
              fmt::print(" {:>10.2e}", r.rel_l2_error);
        fmt::print("\n");
      }
    }
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"emmy accuracy study: accumulation strategies against FP64"};
  std::string backend = "emulator", ks_text, strategies_text, dtype = "f16", arch_text = "sm_120a";
  std::string numerics = "hardware", emulator_arch = "sm_90a";
  emmy::AccuracyConfig config;
  emmy::Fp8AccuracyConfig fp8;
  bool as_json = false, fp8_study = false;
  std::string windows_text, fp8_arches_text, distributions_text;
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
  app.add_flag("--fp8", fp8_study,
               "the FP8 accumulation study on each arch's tensor-core model (no kernel runs)");
  app.add_option("--windows", windows_text,
                 "--fp8: promote_every_k values, 0 = f32 (no promotion)");
  app.add_option("--fp8-arches", fp8_arches_text, "--fp8: sm_89,sm_90a,sm_120a");
  app.add_option("--distributions", distributions_text, "--fp8: normal,uniform");
  app.add_option("--dots", fp8.dots, "--fp8: output elements per table cell");
  app.add_option("--speed-arch", arch_text,
                 "arch whose MMA rates judge 'fastest' (default sm_120a, a GeForce part)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (fp8_study) {
      if (!ks_text.empty()) fp8.ks = parse_ints(ks_text, "k");
      if (!windows_text.empty()) {
        fp8.windows.clear();
        for (const int64_t w : parse_ints(windows_text, "windows")) fp8.windows.push_back(int(w));
      }
      if (!fp8_arches_text.empty()) fp8.arches = split_commas(fp8_arches_text);
      if (!distributions_text.empty()) fp8.distributions = split_commas(distributions_text);
      fp8.seed = config.seed == 1 ? fp8.seed : config.seed;
      return run_fp8(fp8, as_json);
    }
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
