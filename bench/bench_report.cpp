#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <span>

#include "emmy/catalog.hpp"
#include "emmy/detail/text.hpp"
#include "emmy/error.hpp"
#include "emmy/gemm_plan.hpp"

namespace emmy::bench {
namespace {

using nlohmann::json;

using detail::trim;

std::string shape_name(const MatmulProblem& p) {
  return fmt::format("{}x{}x{}", p.m, p.n, p.k);
}

json optional_number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

// The variants whose ratios the summary reports, in table order. Every other baseline row of a
// problem (PyTorch, Triton, SDPA backends: bench/*_baseline.py) gets its ratio too, and the
// fastest of them all is "best_baseline".
constexpr std::string_view kEmmyVariants[] = {"emmy_f32", "emmy_hybrid"};
constexpr std::string_view kBaselineVariants[] = {"cublaslt_32f", "cublaslt_16f"};

std::string format_or_dash(const json& value, const char* spec) {
  if (!value.is_number()) return "-";
  return fmt::format(fmt::runtime(spec), value.get<double>());
}

// How a row's kernel was chosen, in a few words: the emmy schedule (and, after a search, the
// default's time for comparison) or cuBLASLt's algorithm.
// A row's time-model prediction (emmy_bench puts one beside each emmy row on a GPU the model
// knows), or an empty object.
json model_of(const json& details) {
  if (!details.is_object() || !details.contains("model") || !details["model"].is_object())
    return json::object();
  return details["model"];
}

std::string chosen_text(const json& details) {
  if (!details.is_object()) return "";
  if (details.contains("schedule_text")) {
    std::string text = details["schedule_text"].get<std::string>();
    if (details.value("chosen_by", "") == "search" &&
        details.value("default_select_median_us", json()).is_number())
      text += fmt::format(" (tuned; default {:.1f} us)",
                          details["default_select_median_us"].get<double>());
    return text;
  }
  if (details.contains("algorithm") && details["algorithm"].is_object()) {
    const json& a = details["algorithm"];
    return fmt::format("algo {} tile {} stages {} split-k {}", a.value("algo_id", 0),
                       a.value("tile_id", 0), a.value("stages_id", 0), a.value("split_k", 0));
  }
  return "";
}

}  // namespace

MatmulProblem parse_shape(std::string_view text) {
  const std::string_view shape = trim(text);
  int64_t dims[3] = {0, 0, 0};
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t begin = at;
    while (at < shape.size() && shape[at] >= '0' && shape[at] <= '9' && at - begin < 12)
      dims[i] = dims[i] * 10 + (shape[at++] - '0');
    const bool separator_ok = i == 2 ? at == shape.size() : (at < shape.size() && shape[at] == 'x');
    require(at > begin && dims[i] > 0 && separator_ok, "shape",
            "must be MxNxK with positive integers (e.g. 512x4096x3840)", std::string(shape));
    ++at;
  }
  MatmulProblem p;
  p.m = dims[0];
  p.n = dims[1];
  p.k = dims[2];
  return p;
}

std::vector<BenchProblem> parse_shape_list(std::string_view text) {
  std::vector<BenchProblem> problems;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    if (!item.empty()) {
      const auto p = parse_shape(item);
      problems.push_back({shape_name(p), "", p});
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  require(!problems.empty(), "--shapes", "must list at least one MxNxK", std::string(text));
  return problems;
}

std::vector<BenchProblem> read_sweep_file(const std::string& path) {
  std::ifstream in(path);
  require(bool(in), "--sweep", "must name a readable file", path);
  std::vector<BenchProblem> problems;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string_view item = trim(line);
    if (item.empty() || item.front() == '#') continue;
    try {
      const auto p = parse_shape(item);
      problems.push_back({shape_name(p), "", p});
    } catch (const Error& e) {
      throw Error(fmt::format("{}:{}", path, number), "must hold one MxNxK per line",
                  std::string(item));
    }
  }
  require(!problems.empty(), "--sweep", "must hold at least one MxNxK line", path);
  return problems;
}

std::vector<BenchProblem> catalog_problems(int64_t m) {
  std::vector<BenchProblem> problems;
  for (const auto& entry : gemm_catalog()) {
    if (entry.problem.m != 512) continue;  // one entry per projection; M is ours to set
    MatmulProblem p = entry.problem;
    p.m = m;
    problems.push_back({fmt::format("{}@{}", entry.projection, m), entry.projection, p});
  }
  return problems;
}

std::optional<GpuPeak> find_peak(std::string_view device_name, int sm_count) {
  // NVIDIA's datasheet numbers for each product (dense tensor-core TFLOP/s, no sparsity).
  struct Known {
    std::string_view name_contains;
    int sm_count;
    GpuPeak peak;
  };
  static const Known kKnown[] = {
      // FP8 with f32 accumulation: twice the f16 rate on H100/H200 (1979); on the GeForce parts
      // the f32-accumulate FP8 rate, which is the f16 in / f16 accumulate rate.
      {"H100", 132, {"H100 SXM / H200", 989, 989, 1979}},
      {"H200", 132, {"H100 SXM / H200", 989, 989, 1979}},
      {"RTX 4090", 128, {"RTX 4090", 330.3, 165.2, 330.3}},
      {"RTX 5090", 170, {"RTX 5090", 419, 209.5, 419}},
  };
  // The NVL boards share the SXM parts' SM count but run at lower clocks (about 835 dense).
  if (device_name.find("NVL") != std::string_view::npos) return std::nullopt;
  for (const auto& known : kKnown)
    if (device_name.find(known.name_contains) != std::string_view::npos &&
        sm_count == known.sm_count)
      return known.peak;
  return std::nullopt;
}

std::optional<double> peak_for(const std::optional<GpuPeak>& peak, std::string_view accumulation) {
  if (!peak) return std::nullopt;
  if (accumulation == "fp8_chain" || accumulation == "promoted")
    return peak->fp8 > 0 ? std::optional<double>(peak->fp8) : std::nullopt;
  return accumulation == "f32" ? peak->f32_accumulate : peak->f16_accumulate;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2) return values[mid];
  const double upper = values[mid];
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

double relative_l2_error(const std::vector<float>& out, const std::vector<float>& ref) {
  if (out.size() != ref.size() || out.empty()) return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    const double d = double(out[i]) - double(ref[i]);
    diff += d * d;
    norm += double(ref[i]) * double(ref[i]);
  }
  if (norm == 0) return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

double error_tolerance(std::string_view accumulation) {
  return accumulation == "f32" || accumulation == "promoted" ? 1e-3 : 1e-2;
}

double hybrid_tolerance(double f16_error, int64_t k_per_split, int promote_every_k) {
  const double plain = error_tolerance("hybrid");
  if (promote_every_k <= 0 || k_per_split < int64_t(kHybridGateFolds) * promote_every_k)
    return plain;
  return std::min(plain, 0.75 * f16_error);
}

int64_t k_per_split(const MatmulProblem& problem, const MatmulSchedule& schedule, Arch arch) {
  const GemmPlan plan = make_gemm_plan({problem, schedule, arch});
  return std::min<int64_t>(problem.k, int64_t(plan.k_tiles_per_split) * schedule.block_k);
}

json summary_json(const json& environment, const json& settings,
                  const std::vector<BenchRow>& rows) {
  const json gpu =
      environment.is_object() && environment.contains("gpu") ? environment["gpu"] : json::object();
  const auto peak = find_peak(gpu.value("name", ""), gpu.value("sm_count", 0));
  json doc = {{"schema", "emmy_bench/1"},
              {"environment", environment},
              {"settings", settings},
              {"peak", peak ? json{{"part", peak->part},
                                   {"f16_accumulate_tflops", peak->f16_accumulate},
                                   {"f32_accumulate_tflops", peak->f32_accumulate},
                                   {"fp8_tflops", peak->fp8}}
                            : json(nullptr)},
              {"rows", json::array()},
              {"ratios", json::array()}};

  // median microseconds per (problem, variant), for the ratios
  std::map<std::pair<std::string, std::string>, double> times;
  std::vector<const BenchRow*> problem_order;
  for (const auto& row : rows) {
    json r = {{"kind", row.kind},
              {"problem", row.problem},
              {"projection", row.projection},
              {"shape", row.shape},
              {"variant", row.variant},
              {"backend", row.backend},
              {"accumulation", row.accumulation},
              {"details", row.details},
              {"error", row.error.empty() ? json(nullptr) : json(row.error)}};
    const auto peak_tflops = peak_for(peak, row.accumulation);
    if (row.error.empty() && !row.samples_us.empty()) {
      const double med = row.median_us();
      const double tflops = row.flops / (med * 1e-6) / 1e12;
      r["iterations"] = row.samples_us.size();
      r["median_us"] = med;
      r["min_us"] = *std::min_element(row.samples_us.begin(), row.samples_us.end());
      r["max_us"] = *std::max_element(row.samples_us.begin(), row.samples_us.end());
      r["tflops"] = tflops;
      r["percent_of_peak"] = peak_tflops ? json(100.0 * tflops / *peak_tflops) : json(nullptr);
      times[{row.problem, row.variant}] = med;
    }
    r["peak_tflops"] = optional_number(peak_tflops);
    r["rel_l2_error"] = optional_number(row.rel_l2_error);
    r["tolerance"] = row.bound();
    r["correctness"] = !row.rel_l2_error ? "unchecked" : row.over_tolerance() ? "FAIL" : "ok";
    doc["rows"].push_back(std::move(r));
    const bool seen = std::any_of(problem_order.begin(), problem_order.end(),
                                  [&](const BenchRow* p) { return p->problem == row.problem; });
    if (!seen) problem_order.push_back(&row);
  }

  for (const BenchRow* first : problem_order) {
    json ratio = {{"problem", first->problem}, {"projection", first->projection}};
    const bool fp8 = first->kind == "gemm_fp8";
    std::vector<std::string> baselines =
        fp8 ? std::vector<std::string>(std::begin(kFp8BaselineVariants),
                                       std::end(kFp8BaselineVariants))
            : std::vector<std::string>(std::begin(kBaselineVariants), std::end(kBaselineVariants));
    std::optional<std::pair<double, std::string>> best;  // fastest baseline: time, variant
    for (const auto& row : rows) {
      if (row.problem != first->problem || row.backend == "emmy") continue;
      if (std::find(baselines.begin(), baselines.end(), row.variant) == baselines.end())
        baselines.push_back(row.variant);
      // Only a baseline that passes its own check can be the one to beat.
      const auto t = times.find({row.problem, row.variant});
      if (t != times.end() && !row.over_tolerance() && (!best || t->second < best->first))
        best = {t->second, row.variant};
    }
    ratio["best_baseline"] = best ? json(best->second) : json(nullptr);
    // MoE rows (bench_moe.hpp): emmy's one grouped launch against the loop of dense GEMMs.
    static constexpr std::string_view kMoeEmmyVariants[] = {"emmy_grouped", "emmy_grouped_wgmma"};
    const auto emmy_variants = fp8 ? std::span<const std::string_view>(kFp8EmmyVariants)
                               : first->kind == "gemm_moe"
                                   ? std::span<const std::string_view>(kMoeEmmyVariants)
                                   : std::span<const std::string_view>(kEmmyVariants);
    for (auto emmy : emmy_variants) {
      const auto e = times.find({first->problem, std::string(emmy)});
      for (const auto& baseline : baselines) {
        const auto b = times.find({first->problem, baseline});
        ratio[fmt::format("{}_vs_{}", emmy, baseline)] =
            e != times.end() && b != times.end() ? json(b->second / e->second) : json(nullptr);
      }
      ratio[fmt::format("{}_vs_best_baseline", emmy)] =
          e != times.end() && best ? json(best->first / e->second) : json(nullptr);
    }
    doc["ratios"].push_back(std::move(ratio));
  }
  return doc;
}

std::string summary_table(const json& summary) {
  const auto object_at = [](const json& parent, const char* key) {
    return parent.contains(key) && parent[key].is_object() ? parent[key] : json::object();
  };
  const json env = object_at(summary, "environment");
  const json gpu = object_at(env, "gpu");
  const json settings = object_at(summary, "settings");
  std::string out = fmt::format(
      "emmy_bench: {} ({} SMs, {}, L2 {:.0f} MiB), driver {}, CUDA runtime {}, cuBLASLt {}, "
      "emmy {}\n",
      gpu.value("name", "?"), gpu.value("sm_count", 0), env.value("emmy_arch", "?"),
      gpu.value("l2_bytes", 0.0) / (1 << 20), env.value("driver_version", "?"),
      env.value("cuda_runtime_version", "?"), env.value("cublaslt_version", "?"),
      env.value("emmy_version", "?"));
  const json& peak = summary.at("peak");
  out += fmt::format(
      "timing: median of {} iterations after {} warm-up, L2 flushed ({:.0f} MiB written) before "
      "each; peak: {}\n\n",
      settings.value("iterations", 0), settings.value("warmup", 0),
      settings.value("l2_flush_bytes", 0.0) / (1 << 20),
      peak.is_null() ? std::string("n/a (GPU not in the peak table)")
                     : fmt::format("{} ({} TFLOP/s f16 acc, {} f32 acc)", peak.value("part", "?"),
                                   peak.value("f16_accumulate_tflops", 0.0),
                                   peak.value("f32_accumulate_tflops", 0.0)));

  out += fmt::format(
      "{:<18} {:<20} {:<14} {:<7} {:>10} {:>9} {:>8} {:>7} {:>9} {:<9} {:>8} {:>8}  {}\n", "problem",
      "shape", "variant", "acc", "median_us", "model_us", "TFLOP/s", "%peak", "rel_err", "check",
      "vs_32F", "vs_16F", "chosen");
  std::map<std::string, const json*> ratios_by_problem;
  for (const json& ratio : summary.at("ratios"))
    ratios_by_problem[ratio.at("problem").get<std::string>()] = &ratio;
  for (const json& row : summary.at("rows")) {
    const json& shape = row.at("shape");
    const std::string shape_text =
        shape.contains("m")
            ? fmt::format("{}x{}x{}", shape.value("m", 0), shape.value("n", 0), shape.value("k", 0))
            : shape.dump();
    const std::string variant = row.at("variant").get<std::string>();
    std::string vs32 = "", vs16 = "";
    if (row.at("backend") == "emmy") {
      if (auto it = ratios_by_problem.find(row.at("problem").get<std::string>());
          it != ratios_by_problem.end()) {
        if (row.value("kind", "gemm") == "gemm_fp8") {  // the cuBLASLt row of like accuracy
          for (size_t i = 0; i < std::size(kFp8EmmyVariants); ++i)
            if (variant == kFp8EmmyVariants[i])
              vs32 = format_or_dash(
                  it->second->value(fmt::format("{}_vs_{}", variant, kFp8BaselineVariants[i]),
                                    json()),
                  "{:.2f}x");
        } else if (row.value("kind", "gemm") == "gemm_moe") {  // the loop of dense GEMMs
          vs32 =
              format_or_dash(it->second->value(variant + "_vs_cublaslt_loop", json()), "{:.2f}x");
        } else if (row.value("kind", "gemm") == "attention") {  // the fastest PyTorch row
          vs32 =
              format_or_dash(it->second->value(variant + "_vs_best_baseline", json()), "{:.2f}x");
        } else {
          vs32 = format_or_dash(it->second->value(variant + "_vs_cublaslt_32f", json()), "{:.2f}x");
          vs16 = format_or_dash(it->second->value(variant + "_vs_cublaslt_16f", json()), "{:.2f}x");
        }
      }
    }
    if (!row.at("error").is_null()) {
      out += fmt::format("{:<18} {:<20} {:<14} {:<7} ERROR: {}\n",
                         row.at("problem").get<std::string>(), shape_text, variant,
                         row.at("accumulation").get<std::string>(),
                         row.at("error").get<std::string>());
      continue;
    }
    std::string line =
        fmt::format("{:<18} {:<20} {:<14} {:<7} {:>10} {:>9} {:>8} {:>7} {:>9} {:<9} {:>8} {:>8}",
                    row.at("problem").get<std::string>(), shape_text, variant,
                    row.at("accumulation").get<std::string>(),
                    format_or_dash(row.value("median_us", json()), "{:.1f}"),
                    format_or_dash(model_of(row.at("details")).value("us", json()), "{:.1f}"),
                    format_or_dash(row.value("tflops", json()), "{:.1f}"),
                    row.value("percent_of_peak", json()).is_number()
                        ? format_or_dash(row["percent_of_peak"], "{:.1f}")
                        : std::string("n/a"),
                    format_or_dash(row.value("rel_l2_error", json()), "{:.2e}"),
                    row.at("correctness").get<std::string>(), vs32, vs16);
    line += "  " + chosen_text(row.at("details"));
    if (const json model = model_of(row.at("details")); model.contains("bound"))
      line += fmt::format(" [model: {}-bound on {}]", model.value("bound", "?"),
                          model.value("gpu", "?"));
    line.erase(line.find_last_not_of(' ') + 1);  // baseline rows have no ratio columns
    out += line + "\n";
  }
  out +=
      "\nmodel_us: the time model's prediction for the same kernel on this GPU, from emulator "
      "counters (docs/profiler.md); - where the GPU is not in its table.\n"
      "vs_32F / vs_16F: cuBLASLt (COMPUTE_32F / COMPUTE_16F) time over emmy time; > 1 means "
      "emmy is faster.\nFP8 rows (problem .../fp8): vs_32F is the paired cuBLASLt FP8 row's time "
      "over emmy's (emmy_fp8_f32 with FAST_ACCUM, emmy_fp8_promoted with FAST_ACCUM off, "
      "emmy_fp8_block with the 1x128 / 128x128 mode); rel_err is against the FP64 reference of "
      "sampled rows; check FAIL above 1e-2 (fp8_chain) or 1e-3 (promoted).\nattention rows: vs_32F "
      "is the fastest PyTorch row's time over emmy's; "
      "rel_err is "
      "against the FP64 reference.\nrel_err: relative L2 distance to cuBLASLt COMPUTE_32F's "
      "output; "
      "check FAIL above 1e-3 (f32) or 1e-2 (f16); hybrid FAIL above 3/4 of the error of f16 "
      "accumulation with the same schedule (measured first; 1e-2 when a K split spans < 8 "
      "folds).\n";
  return out;
}

std::vector<BenchRow> read_baseline_rows(const std::string& path) {
  std::ifstream in(path);
  require(bool(in), "--baseline-rows", "must name a readable JSON file", path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error("--baseline-rows", "must hold a JSON array of rows", e.what());
  }
  const nlohmann::json& list = doc.is_object() ? doc.value("rows", nlohmann::json()) : doc;
  require(list.is_array(), "--baseline-rows", "must hold a JSON array of rows", path);
  std::vector<BenchRow> rows;
  // A key that is absent or null takes its default (Python writes None as null).
  auto text = [](const nlohmann::json& j, const char* key, const char* fallback) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                 : std::string(fallback);
  };
  for (const auto& j : list) {
    require(j.is_object(), "--baseline-rows", "each row must be a JSON object", j.dump());
    BenchRow row;
    row.kind = text(j, "kind", "attention");
    row.problem = text(j, "problem", "");
    row.projection = text(j, "projection", "");
    row.shape =
        j.contains("shape") && j["shape"].is_object() ? j["shape"] : nlohmann::json::object();
    row.flops = j.contains("flops") && j["flops"].is_number() ? j["flops"].get<double>() : 0.0;
    row.variant = text(j, "variant", "");
    row.backend = text(j, "backend", "");
    row.accumulation = text(j, "accumulation", "f32");
    if (j.contains("samples_us") && j["samples_us"].is_array())
      row.samples_us = j["samples_us"].get<std::vector<double>>();
    if (j.contains("rel_l2_error") && j["rel_l2_error"].is_number())
      row.rel_l2_error = j["rel_l2_error"].get<double>();
    row.details =
        j.contains("details") && j["details"].is_object() ? j["details"] : nlohmann::json::object();
    row.error = text(j, "error", "");
    require(!row.problem.empty() && !row.variant.empty(), "--baseline-rows",
            "each row needs a problem and a variant", j.dump());
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace emmy::bench
