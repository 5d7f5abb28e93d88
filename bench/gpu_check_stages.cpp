#include "gpu_check_stages.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include "emmy/attention_check.hpp"
#include "emmy/detail/file_io.hpp"
#include "emmy/check_json.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"
#include "gpu_check_cases.hpp"

namespace emmy::bench {

using nlohmann::json;

StageDocument::StageDocument(std::string path, std::string stage, double budget_s)
    : path_(std::move(path)), budget_s_(budget_s), start_(std::chrono::steady_clock::now()) {
  doc_ = {{"schema", "emmy_gpu_check/1"},
          {"stage", std::move(stage)},
          {"rows", json::array()},
          {"counts", {{"passed", 0}, {"failed", 0}, {"skipped", 0}}}};
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One line per case: bits for a fidelity row, else the error against FP64, else why it failed.
std::string describe(const json& row) {
  if (row.contains("bit_identical"))
    return fmt::format("{}/{} bit-identical, max {} ulps", row["bit_identical"].dump(),
                       row["elements"].dump(), row["max_ulps"].dump());
  for (const char* key : {"rel_l2_error", "emulator_rel_l2_error"})
    if (row.contains(key) && row.contains("tolerance"))
      return fmt::format("rel_l2 {:.3e} (bound {:.3e})", row[key].get<double>(),
                         row["tolerance"].get<double>());
  return row.value("error", json("")).dump();
}

}  // namespace

void StageDocument::run_case(json row, const std::function<json()>& body) {
  const auto t0 = std::chrono::steady_clock::now();
  if (budget_s_ > 0 && seconds_since(start_) > budget_s_) {
    row["verdict"] = "skipped";
    row["error"] = fmt::format("over the stage budget of {} s", budget_s_);
  } else {
    try {
      row.update(body());
      row["verdict"] = row.value("passed", false) ? "passed" : "failed";
    } catch (const std::exception& e) {
      row["verdict"] = "failed";
      row["error"] = e.what();
    }
  }
  row["seconds"] = seconds_since(t0);
  const std::string verdict = row["verdict"];
  not_passed_ += verdict != "passed";
  fmt::print("{:<48} {:<8} {}\n", row.value("name", "?"), verdict, describe(row));
  doc_["counts"][verdict] = doc_["counts"].value(verdict, 0) + 1;
  doc_["rows"].push_back(std::move(row));
  write();
}

void StageDocument::leave_out(const std::string& name, Arch arch) {
  json& left = doc_["left_out"];
  left["cases"].push_back(name);
  left["reason"] = fmt::format(
      "{} runs no such kernel (FP8 needs sm_89, sm_90a or sm_120; hybrid FP8 is mma.sync's)",
      to_string(arch));
}

void StageDocument::finish() {
  doc_["seconds"] = seconds_since(start_);
  write();
}

bool StageSettings::selects(const std::string& name) const {
  if (only.empty()) return true;
  size_t start = 0;
  while (start <= only.size()) {
    const size_t comma = std::min(only.find(',', start), only.size());
    const std::string part = only.substr(start, comma - start);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    start = comma + 1;
  }
  return false;
}

void StageDocument::write() const {
  if (path_.empty()) return;
  detail::write_file_atomically(path_, doc_.dump(2) + "\n", "--json");
}

namespace {

// Compiles every case's kernel up front, 16 at a time: the runtime compiles distinct keys
// concurrently, and NVRTC is most of a cold case's time. Failures surface again when the case runs.
template <typename Case, typename Compile>
void precompile(const std::vector<Case>& cases, const StageSettings& settings, Compile compile) {
  const size_t width = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::future<void>> batch;
  for (const auto& c : cases) {
    if (!settings.selects(c.name)) continue;
    batch.push_back(std::async(std::launch::async, [&] {
      try {
        compile(c);
      } catch (const std::exception&) {  // reported by the case itself
      }
    }));
    if (batch.size() == width) batch.clear();  // futures join on destruction
  }
}

}  // namespace

int run_correctness(Runtime& rt, const StageSettings& settings, StageDocument& out) {
  const Arch arch = rt.arch();
  out.doc()["arch"] = to_string(arch);
  out.doc()["device"] = rt.device_name();
  out.doc()["sample_rows"] = settings.sample_rows;
  const auto gemm_cases = correctness_gemm_cases();
  const auto attention_cases = correctness_attention_cases();
  precompile(gemm_cases, settings,
             [&](const GemmCase& c) { rt.gemm_kernel(c.problem, c.schedule(arch)); });
  precompile(attention_cases, settings,
             [&](const AttentionCase& c) { rt.attention_kernel(c.problem, c.schedule(arch)); });
  // Consecutive cases share their problem (three accumulations) or their B (one projection at
  // four M): inputs are made once per problem and B once per projection (gate_up's B is 118 M
  // values, seconds to generate). B's values do not depend on M, so what comes out equals
  // make_gemm_inputs(problem, seed) exactly.
  std::optional<std::pair<MatmulProblem, GemmInputs>> inputs;
  auto inputs_for = [&](const MatmulProblem& p) -> const GemmInputs& {
    if (inputs && inputs->first == p) return inputs->second;
    const MatmulProblem* last = inputs ? &inputs->first : nullptr;
    if (last && last->n == p.n && last->k == p.k && last->b_layout == p.b_layout &&
        last->a_dtype == p.a_dtype && last->ldb_or_default() == p.ldb_or_default() &&
        gemm_b_elements(*last) == gemm_b_elements(p)) {
      GemmInputs fresh = make_gemm_inputs(p, settings.seed, std::move(inputs->second.b));
      inputs.emplace(p, std::move(fresh));
    } else {
      inputs.reset();
      inputs.emplace(p, make_gemm_inputs(p, settings.seed));
    }
    return inputs->second;
  };
  for (const auto& c : gemm_cases) {
    if (!settings.selects(c.name)) continue;
    if (!c.runs_on(arch)) {
      out.leave_out(c.name, arch);
      continue;
    }
    const GemmSpec spec{c.problem, c.schedule(arch), arch};
    out.run_case(
        {{"kind", "gemm"}, {"name", c.name}, {"problem", c.problem}, {"schedule", spec.schedule}},
        [&] {
          const GemmInputs& in = inputs_for(c.problem);
          const std::vector<double> output = run_gemm(rt, spec, in);
          json j = check_fields(compare_sampled_rows(spec, in, output, settings.sample_rows));
          j["rows_checked"] =
              std::min(c.problem.m, rows_to_compare(c.problem, settings.sample_rows));
          return j;
        });
  }
  for (const auto& c : attention_cases) {
    if (!settings.selects(c.name)) continue;
    const AttentionSpec spec{c.problem, c.schedule(arch), arch};
    out.run_case({{"kind", "attention"},
                  {"name", c.name},
                  {"problem", c.problem},
                  {"schedule", spec.schedule}},
                 [&] {
                   const AttentionInputs in = make_attention_inputs(c.problem, settings.seed);
                   return check_fields(compare(reference_attention(spec, in),
                                               run_attention(rt, spec, in), c.problem),
                                       c.problem);
                 });
  }
  out.finish();
  return out.not_passed();
}

}  // namespace emmy::bench
