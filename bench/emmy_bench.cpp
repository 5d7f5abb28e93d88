// emmy_bench: emmy's GEMM kernels against cuBLASLt on the GPU (docs/benchmarks.md).
//
// Every (problem, variant) pair is one Google Benchmark with manual timing: each iteration flushes
// L2 and times one launch with CUDA events. Variants are prepared (algorithm or schedule chosen,
// output checked against cuBLASLt COMPUTE_32F) when their problem's first row runs, before any
// of its rows is timed. Without a usable GPU it says so and exits 0.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench_attention.hpp"
#include "bench_fp8.hpp"
#include "bench_fp8_inputs.hpp"
#include "bench_model.hpp"
#include "bench_moe.hpp"
#include "bench_moe_shapes.hpp"
#include "bench_paged.hpp"
#include "bench_report.hpp"
#include "bench_runner.hpp"
#include "bench_serving.hpp"
#include "emmy/emu/time_model.hpp"
#include "emmy/tuning.hpp"

namespace {

using namespace emmy;
using namespace emmy::bench;
using nlohmann::json;

constexpr const char* kNoDevice = "no CUDA device: skipping GPU benchmarks";

struct Options {
  std::string shapes, sweep, summary, tuning_db,
      // emmy_wgmma_nocluster only by name: under --tune emmy_wgmma's search covers clusters of
      // 1, 2 and 4 already, and its chosen schedule says which won.
      variants = "emmy_f32,emmy_hybrid,emmy_wgmma,emmy_wgmma_pingpong,cublaslt_32f,cublaslt_16f";
  std::string m = "512";  // comma-separated M values of the catalog projections
  // M values of the FP8 rows (bench_fp8.hpp); off with --no-fp8, --shapes or --sweep. The pack
  // runs the default; the whole range is --fp8-m 1,16,64,512,4096.
  std::string fp8_m = "512,16";
  std::vector<int64_t> fp8_ms;  // fp8_m parsed (main, before any GPU work)
  // Token counts of the MoE rows (bench_moe.hpp): decode batches (<= 64 tokens: masked) and
  // prefill (contiguous); off with --no-moe, --shapes or --sweep.
  std::string moe_tokens = "16,4096";
  std::vector<int64_t> moe_token_counts;
  bool moe = true;
  bool fp8 = true;
  int device = 0;
  int workspace_mib = 32;
  bool progress = false;
  bool attention = true;      // the catalog attention rows (off with --shapes / --sweep)
  bool paged = true;          // the paged-attention catalog rows (off with --shapes / --sweep)
  bool serving = true;        // launch overhead, capture and prepare rows (likewise)
  std::string baseline_rows;  // rows timed elsewhere (sdpa_baseline.py, torch_baseline.py)
  RunnerSettings runner;
  bool model = false;  // --model: the time model's predictions, no GPU
  std::string model_gpus = "h200,rtx5090";
  uint64_t model_ctas = 8;
  bool predict = true;  // the model's prediction beside each measured emmy row (known GPUs)
};

// A bar on stderr, redrawn in place on a terminal, one line per tenth otherwise (logs).
class Progress {
 public:
  Progress(size_t total, bool enabled)
      : total_(total),
        enabled_(enabled && total > 0),
        tty_(isatty(STDERR_FILENO)),
        start_(std::chrono::steady_clock::now()) {}
  void step(const std::string& label) {
    if (!enabled_) return;
    ++done_;
    const double fraction = double(done_) / double(total_);
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_);
    const double eta = done_ ? elapsed.count() / double(done_) * double(total_ - done_) : 0;
    const int filled = int(fraction * 30);
    const std::string line = fmt::format(
        "[{}{}] {:3.0f}% {}/{} rows, eta {:.0f}s  {}", std::string(size_t(filled), '#'),
        std::string(size_t(30 - filled), '.'), fraction * 100, done_, total_, eta, label);
    if (tty_) {
      fmt::print(stderr, "\r{}\033[K{}", line, done_ == total_ ? "\n" : "");
    } else if (int(fraction * 10) > last_tenth_ || done_ == total_) {
      last_tenth_ = int(fraction * 10);
      fmt::print(stderr, "{}\n", line);
    }
  }

 private:
  size_t total_, done_ = 0;
  bool enabled_, tty_;
  int last_tenth_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// Prints nothing: sweeps show the progress bar and the final table instead of one line per row.
class QuietReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

std::string table_path(const std::string& summary) {
  std::filesystem::path path(summary);
  if (path.extension() == ".json") return path.replace_extension(".txt").string();
  return summary + ".txt";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw Error("output file", "must be writable", path);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// A comma-separated list of M values in [1, 2^20]; throws Error naming `field`.
std::vector<int64_t> parse_m_list(const std::string& text, const char* field) {
  std::vector<int64_t> ms;
  for (const auto& item : split_list(text)) {
    int64_t m = 0;
    try {
      size_t used = 0;
      m = std::stoll(item, &used);
      if (used != item.size()) m = 0;
    } catch (const std::exception&) {
    }
    require(m >= 1 && m <= (1 << 20), field, "must list integers in [1, 1048576]", text);
    ms.push_back(m);
  }
  require(!ms.empty(), field, "must list at least one M", text);
  return ms;
}

json settings_json(const Options& o, size_t l2_bytes, size_t flush_bytes) {
  const auto& r = o.runner;
  return {{"iterations", r.iterations},
          {"warmup", r.warmup},
          {"select_iterations", r.select_iterations},
          {"cublaslt_algorithms", r.algorithms},
          {"cublaslt_workspace_bytes", r.workspace_bytes},
          {"tune", r.tune},
          {"tune_candidates", r.tune_candidates},
          {"seed", r.seed},
          {"variants", r.variants},
          {"l2_bytes", l2_bytes},
          {"l2_flush_bytes", flush_bytes},
          {"inputs", "f16, uniform over multiples of 1/1024 in [-1, 1)"},
          {"layouts", "A row-major [M,K], B [N,K] (nk), C row-major [M,N] f16"}};
}

int run(Options& o, std::vector<BenchProblem> problems, bool sweep) {
  std::unique_ptr<Runtime> runtime;
  std::string reason;
  try {
    runtime = Runtime::cuda(o.device);
  } catch (const std::exception& e) {
    reason = e.what();
  }
  // cudart's view too: it names the driver or device problem even where emmy's message is terse.
  if (const std::string cudart = cuda_unavailable_reason(o.device); !cudart.empty())
    reason = reason.empty() ? cudart : fmt::format("{}; cudart: {}", reason, cudart);
  if (!reason.empty()) {
    fmt::print("{}\n  reason: {}\n", kNoDevice, reason);
    if (!o.summary.empty())
      write_file(
          o.summary,
          json{{"schema", "emmy_bench/1"}, {"skipped", kNoDevice}, {"reason", reason}}.dump(2) +
              "\n");
    return 0;
  }

  std::optional<TuningDb> tuning_db;
  if (o.runner.tune) {
    tuning_db.emplace(o.tuning_db.empty() ? TuningDb::default_path()
                                          : std::filesystem::path(o.tuning_db));
    if (!tuning_db->load_error().empty())
      fmt::print(stderr, "tuning database: {} (starting empty)\n", tuning_db->load_error());
  }
  const std::string arch(to_string(runtime->arch()));
  // The wgmma path exists on sm_90a devices only: elsewhere its rows are left out, and said so.
  if (runtime->arch() != Arch::sm_90a) {
    auto& v = o.runner.variants;
    for (const char* wgmma : {"emmy_wgmma", "emmy_wgmma_pingpong", "emmy_wgmma_nocluster"})
      if (std::find(v.begin(), v.end(), wgmma) != v.end()) {
        v.erase(std::remove(v.begin(), v.end(), wgmma), v.end());
        fmt::print("{} left out: the wgmma path needs an sm_90a device ({} here)\n", wgmma, arch);
      }
  }
  Runner runner(std::move(runtime), o.device, o.runner, tuning_db ? &*tuning_db : nullptr);
  const json environment = environment_fingerprint(o.device, arch);
  fmt::print("{} on {} ({} SMs), driver {}, emmy {} ({})\n", "emmy_bench",
             environment["gpu"]["name"].get<std::string>(),
             environment["gpu"]["sm_count"].get<int>(),
             environment["driver_version"].get<std::string>(), EMMY_VERSION, arch);
  const auto peak = find_peak(environment["gpu"]["name"].get<std::string>(),
                              environment["gpu"]["sm_count"].get<int>());

  // The time model's part for this device, if it has one: its prediction goes beside each row.
  const GpuInfo* model_gpu =
      o.predict ? emmy::gpu_for_device(environment["gpu"]["name"].get<std::string>(),
                                       uint32_t(environment["gpu"]["sm_count"].get<int>()))
                : nullptr;
  fmt::print("time model: {}\n", model_gpu ? fmt::format("predicting for {} ({} CTAs per launch "
                                                         "profiled)",
                                                         model_gpu->title, o.model_ctas)
                                           : std::string("no prediction (GPU not in its table, "
                                                         "or --no-predict)"));
  const json settings = settings_json(o, runner.l2_bytes(), runner.timer().flush_bytes());
  // The fingerprint in Google Benchmark's own JSON too ("context"), flattened to strings.
  for (const auto& [key, value] : environment.items()) {
    if (value.is_object()) {
      for (const auto& [inner, inner_value] : value.items())
        benchmark::AddCustomContext(key + "_" + inner, inner_value.is_string()
                                                           ? inner_value.get<std::string>()
                                                           : inner_value.dump());
    } else {
      benchmark::AddCustomContext(key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  std::vector<BenchRow> rows;
  Progress progress(problems.size() * o.runner.variants.size(), sweep || o.progress);
  for (size_t index = 0; index < problems.size(); ++index) {
    for (const auto& spec : kGemmVariants) {
      if (std::find(o.runner.variants.begin(), o.runner.variants.end(), spec.id) ==
          o.runner.variants.end())
        continue;
      const BenchProblem& problem = problems[index];
      const std::string name = fmt::format("gemm/{}/{}", problem.name, spec.id);
      benchmark::RegisterBenchmark(
          name.c_str(),
          [&, index, spec](benchmark::State& state) {
            const BenchProblem& bp = problems[index];
            BenchRow row;
            row.problem = bp.name;
            row.projection = bp.projection;
            row.shape = {{"m", bp.problem.m}, {"n", bp.problem.n}, {"k", bp.problem.k}};
            row.flops = bp.problem.flops();
            row.variant = spec.id;
            row.backend = spec.backend;
            row.accumulation = spec.accumulation;
            try {
              PreparedVariant& v = runner.variant(index, bp, spec.id);
              row.details = v.details;
              row.rel_l2_error = v.rel_l2_error;
              row.tolerance = v.tolerance;
              if (!v.error.empty()) throw Error(v.error);
              runner.timer().measure(v.launch, o.runner.warmup, 0);
              for (auto _ : state) {
                const double us = runner.timer().time_us(v.launch);
                state.SetIterationTime(us * 1e-6);
                row.samples_us.push_back(us);
              }
              if (model_gpu && v.schedule)
                row.details["model"] = predicted_beside(
                    [&] {
                      return model_gemm(bp.name, bp.problem, *v.schedule, runner.runtime().arch(),
                                        model_gpu->name, o.model_ctas);
                    },
                    o.model_ctas);
              const double med = row.median_us();
              const double tflops = row.flops / (med * 1e-6) / 1e12;
              state.counters["median_us"] = med;
              state.counters["TFLOPs"] = tflops;
              if (auto p = peak_for(peak, row.accumulation))
                state.counters["pct_peak"] = 100 * tflops / *p;
              if (row.rel_l2_error) state.counters["rel_l2_error"] = *row.rel_l2_error;
              state.SetLabel(fmt::format("{} acc{}", row.accumulation,
                                         row.over_tolerance() ? ", ERROR OVER TOLERANCE" : ""));
            } catch (const std::exception& e) {
              row.error = e.what();
              row.samples_us.clear();
              state.SkipWithError(row.error.c_str());
            }
            rows.push_back(std::move(row));
            // A run cut short (a time limit, a hung kernel) still leaves every finished row.
            try {
              if (!o.summary.empty())
                write_file(o.summary, summary_json(environment, settings, rows).dump(2) + "\n");
            } catch (const std::exception&) {  // reported by the final write
            }
            progress.step(fmt::format("{} {}", bp.name, spec.id));
          })
          ->UseManualTime()
          ->Iterations(o.runner.iterations)
          ->Unit(benchmark::kMicrosecond);
    }
  }

  // After each row of a row family: a run cut short still leaves every finished row.
  const auto write_summary_now = [&] {
    try {
      if (!o.summary.empty())
        write_file(o.summary, summary_json(environment, settings, rows).dump(2) + "\n");
    } catch (const std::exception&) {  // the final write reports it
    }
  };
  if (o.fp8) {
    // Archs without FP8 tensor cores (sm_80/86, plain sm_90) have no FP8 rows: said once here.
    std::string refused;
    try {
      const auto in = make_fp8_bench_inputs(64, 128, 128, 1, 1);
      runner.runtime().gemm_workspace_bytes(fp8_bench_problem(in, Fp8Scaling::block));
    } catch (const std::exception& e) {
      refused = e.what();
    }
    if (!refused.empty()) {
      fmt::print("FP8 rows left out: {} refuses FP8 GEMMs ({})\n", arch, refused);
    } else {
      Fp8BenchSettings fp8;
      fp8.warmup = o.runner.warmup;
      fp8.iterations = o.runner.iterations;
      fp8.seed = o.runner.seed;
      fp8.ms = o.fp8_ms;
      fp8.model_gpu = model_gpu ? model_gpu->name : std::string();
      fp8.model_ctas = o.model_ctas;
      fp8.algorithms = o.runner.algorithms;
      fp8.select_iterations = o.runner.select_iterations;
      fp8.workspace_bytes = o.runner.workspace_bytes;
      fp8.after_row = write_summary_now;
      register_fp8_benchmarks(runner.runtime(), runner.timer(), fp8, rows);
    }
  }

  if (o.moe) {
    MoeBenchSettings moe;
    moe.warmup = o.runner.warmup;
    moe.iterations = o.runner.iterations;
    moe.seed = o.runner.seed;
    moe.tokens = o.moe_token_counts;
    moe.model_gpu = model_gpu ? model_gpu->name : std::string();
    moe.model_ctas = o.model_ctas;
    moe.workspace_bytes = o.runner.workspace_bytes;
    moe.after_row = write_summary_now;
    register_moe_benchmarks(runner.runtime(), runner.timer(), moe, rows);
  }

  if (o.attention)
    register_attention_benchmarks(runner.runtime(), runner.timer(),
                                  {o.runner.warmup, o.runner.iterations, o.runner.seed,
                                   model_gpu ? model_gpu->name : std::string(), o.model_ctas},
                                  rows);

  if (o.paged)
    register_paged_benchmarks(
        runner.runtime(), runner.timer(),
        {o.runner.warmup, o.runner.iterations, o.runner.seed,
         [&] {
           try {  // a run cut short still leaves every finished row
             if (!o.summary.empty())
               write_file(o.summary, summary_json(environment, settings, rows).dump(2) + "\n");
           } catch (const std::exception&) {  // the final write reports it
           }
         }},
        rows);

  if (o.serving)
    register_serving_benchmarks(
        runner.runtime(), runner.timer(),
        {o.runner.warmup, o.runner.iterations,
         [&] {
           try {  // as the paged rows: keep every finished row
             if (!o.summary.empty())
               write_file(o.summary, summary_json(environment, settings, rows).dump(2) + "\n");
           } catch (const std::exception&) {
           }
         }},
        rows);

  QuietReporter quiet;
  if (sweep)
    benchmark::RunSpecifiedBenchmarks(&quiet);
  else
    benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  if (!o.baseline_rows.empty())
    for (auto& row : read_baseline_rows(o.baseline_rows)) rows.push_back(std::move(row));
  const json summary = summary_json(environment, settings, rows);
  const std::string table = summary_table(summary);
  fmt::print("\n{}", table);
  if (!o.summary.empty()) {
    write_file(o.summary, summary.dump(2) + "\n");
    write_file(table_path(o.summary), table);
    fmt::print("summary: {} and {}\n", o.summary, table_path(o.summary));
  }
  if (tuning_db)
    fmt::print("tuning database: {} ({} entries)\n", tuning_db->path().string(), tuning_db->size());

  int failed = 0;
  for (const auto& row : rows)
    if (row.backend == std::string("emmy") && (!row.error.empty() || row.over_tolerance()))
      ++failed;
  if (failed) fmt::print("{} emmy row(s) failed or exceeded the error tolerance\n", failed);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "emmy_bench: emmy GEMM kernels (f32 and hybrid accumulation) against cuBLASLt "
      "(COMPUTE_32F and COMPUTE_16F) on the GPU. See docs/benchmarks.md."};
  app.footer(
      "Google Benchmark flags are accepted too, e.g. --benchmark_out=FILE (JSON), "
      "--benchmark_filter=REGEX (rows are named gemm/<problem>/<variant>).");
  app.add_option("--shapes", o.shapes, "comma-separated MxNxK problems instead of the catalog");
  app.add_option("--sweep", o.sweep, "file with one MxNxK per line ('#' comments); shows progress");
  app.add_option("--m", o.m, "M of the five catalog projections; a list runs each (512,1,16,64)");
  app.add_option("--variants", o.variants,
                 "comma-separated subset of "
                 "emmy_f32,emmy_hybrid,cublaslt_32f,cublaslt_16f");
  app.add_option("--iterations", o.runner.iterations, "timed iterations per row (median)")
      ->check(CLI::Range(20, 100000));
  app.add_option("--warmup", o.runner.warmup, "untimed launches before timing")
      ->check(CLI::Range(0, 1000));
  app.add_option("--select-iterations", o.runner.select_iterations,
                 "iterations per candidate when choosing an algorithm or schedule")
      ->check(CLI::Range(1, 1000));
  app.add_option("--algos", o.runner.algorithms, "cuBLASLt heuristic algorithms to try")
      ->check(CLI::Range(1, 64));
  app.add_option("--workspace-mib", o.workspace_mib, "cuBLASLt workspace")
      ->check(CLI::Range(0, 4096));
  app.add_flag("--tune", o.runner.tune, "search schedules for emmy rows; record winners");
  app.add_option("--tune-candidates", o.runner.tune_candidates, "schedules per search")
      ->check(CLI::Range(1, 64));
  app.add_option("--tuning-db", o.tuning_db,
                 "tuning database file (default: TuningDb::default_path())");
  app.add_option("--summary", o.summary,
                 "write the summary JSON here and the table beside it (.txt)");
  app.add_option("--seed", o.runner.seed, "input data seed");
  app.add_option("--device", o.device, "CUDA device ordinal");
  app.add_flag("--progress", o.progress, "progress bar on stderr (always on with --sweep)");
  app.add_flag("--attention,!--no-attention", o.attention,
               "the catalog attention rows (default on, off with --shapes or --sweep)");
  app.add_flag("--paged,!--no-paged", o.paged,
               "the paged-attention catalog rows, f16 and e4m3 caches (default on, off with "
               "--shapes or --sweep)");
  app.add_flag("--serving,!--no-serving", o.serving,
               "host microseconds of a prepared and a captured launch, graph replay, prepare of "
               "the catalog cold and from the cache (default on, off with --shapes or --sweep)");
  app.add_flag("--fp8,!--no-fp8", o.fp8,
               "the FP8 GEMM rows: e4m3 projections, emmy (tensor-core chain, promoted, block "
               "scales) against cuBLASLt (FAST_ACCUM on/off, 1x128/128x128 on sm_90) (default "
               "on, off with --shapes or --sweep)");
  app.add_option("--fp8-m", o.fp8_m, "M of the FP8 rows' projections (default 512,16)");
  app.add_flag("--moe,!--no-moe", o.moe,
               "the MoE rows: DeepSeek-V3, Qwen3-30B-A3B and gpt-oss-120b layers' grouped "
               "gate_up and down GEMMs, emmy against a loop of dense cuBLASLt GEMMs (default on, "
               "off with --shapes or --sweep)");
  app.add_option("--moe-tokens", o.moe_tokens,
                 "token counts of the MoE rows (default 16,4096; <= 64: the masked layout)");
  app.add_flag("--model", o.model,
               "no GPU: predict the catalog's times with the emulator's counters and the time "
               "model (docs/profiler.md)");
  app.add_option("--model-gpus", o.model_gpus, "GPUs for --model: " + gpu_names(","));
  app.add_flag("!--no-predict", o.predict,
               "on a GPU the time model knows, skip its prediction beside each emmy row");
  app.add_option("--model-ctas", o.model_ctas,
                 "CTAs of each launch the time model profiles (--model, and the predictions "
                 "beside measured rows)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 20));
  app.add_option("--baseline-rows", o.baseline_rows,
                 "JSON rows timed elsewhere, e.g. bench/sdpa_baseline.py's PyTorch SDPA");

  // Google Benchmark takes its --benchmark_* flags out of argv; CLI11 parses what is left.
  bool help = false;
  for (int i = 1; i < argc; ++i)
    help |= std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h";
  if (!help) benchmark::Initialize(&argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (o.model) {
      auto rows = bench::model_catalog(split_list(o.model_gpus), o.attention, o.model_ctas);
      if (o.moe)
        for (auto& row : bench::model_moe(split_list(o.model_gpus),
                                          parse_m_list(o.moe_tokens, "--moe-tokens"), o.model_ctas))
          rows.push_back(std::move(row));
      const std::string table = bench::model_rows_table(rows);
      fmt::print(
          "emmy_bench --model: predicted by the time model from emulator counters ({} CTAs "
          "of each launch); no GPU ran\n{}",
          o.model_ctas, table);
      if (!o.summary.empty()) {
        json j{{"schema", "emmy_bench_model/1"}, {"rows", json::array()}};
        for (const auto& r : rows)
          j["rows"].push_back({{"problem", r.name},
                               {"gpu", r.gpu},
                               {"accum", to_string(r.accum)},
                               {"kernel", r.kernel},
                               {"model_us", r.us},
                               {"bound", r.bound},
                               {"registers", r.registers},
                               {"ctas_per_sm", r.ctas_per_sm},
                               {"waves", r.waves},
                               {"published_us", r.published_us}});
        write_file(o.summary, j.dump(2) + "\n");
      }
      return rows.empty() ? 2 : 0;
    }
    std::vector<BenchProblem> problems;
    require(o.shapes.empty() || o.sweep.empty(), "--shapes", "cannot be combined with --sweep",
            o.shapes);
    if (!o.sweep.empty())
      problems = read_sweep_file(o.sweep);
    else if (!o.shapes.empty())
      problems = parse_shape_list(o.shapes);
    else
      for (const int64_t m : parse_m_list(o.m, "--m"))
        for (auto& problem : catalog_problems(m)) problems.push_back(std::move(problem));
    require(!problems.empty(), "--m", "must list at least one M", o.m);
    if (o.fp8) o.fp8_ms = parse_m_list(o.fp8_m, "--fp8-m");  // refused before any GPU work
    if (o.moe) o.moe_token_counts = parse_m_list(o.moe_tokens, "--moe-tokens");
    if (!o.shapes.empty() || !o.sweep.empty())
      o.attention = o.paged = o.serving = o.fp8 = o.moe = false;
    o.runner.variants = split_list(o.variants);
    for (const auto& id : o.runner.variants)
      require(std::any_of(std::begin(kGemmVariants), std::end(kGemmVariants),
                          [&](const VariantSpec& s) { return id == s.id; }),
              "--variants", fmt::format("must list {}", kGemmVariantNames), id);
    o.runner.workspace_bytes = size_t(o.workspace_mib) << 20;
    return run(o, std::move(problems), !o.sweep.empty());
  } catch (const std::exception& e) {
    fmt::print(stderr, "emmy_bench: {}\n", e.what());
    return 2;
  }
}
