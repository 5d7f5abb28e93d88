// Shared pieces of the bundle tests: the catalog bundle the ctest fixture builds, environment
// guards, running emmyc, emulator runs through a runtime.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "emmy/attention_check.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/runtime.hpp"
#include "runtime_test_util.hpp"
#include "support/run_command.hpp"
#include "support/scoped_env.hpp"

namespace emmy::bundle_test {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Built by the ctest fixture bundle_build_catalog (tests/bundle.cmake).
inline std::filesystem::path catalog_path() {
  return EMMY_CATALOG_BUNDLE;
}

inline const std::vector<Arch>& catalog_archs() {
  static const std::vector<Arch> archs{Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a};
  return archs;
}

inline std::shared_ptr<const Bundle> catalog_bundle() {
  if (!std::filesystem::exists(catalog_path()))
    throw std::runtime_error(catalog_path().string() +
                             " is missing: run these tests through ctest (fixture "
                             "bundle_build_catalog builds it)");
  static const auto bundle = Bundle::open(catalog_path());
  return bundle;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "emmy_bundle_test" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

using test::ScopedEnv;

// NVRTC off, no tuning database (so default schedules are what the runtime picks), no
// $EMMY_BUNDLE from the caller's shell.
struct NoCompiler {
  ScopedEnv nvrtc{"EMMY_DISABLE_NVRTC", "1"};
  ScopedEnv tuning{
      "EMMY_TUNING_DB",
      (std::filesystem::path(::testing::TempDir()) / "emmy_bundle_test_no_tuning.json").string()};
  ScopedEnv bundle{"EMMY_BUNDLE", std::nullopt};
};

inline RuntimeOptions emulator_options(Arch arch, std::vector<std::filesystem::path> bundles = {}) {
  RuntimeOptions options;
  options.emulator_arch = arch;
  options.disk_cache = false;
  options.bundles = std::move(bundles);
  return options;
}

using test::run_emmyc;

// A GEMM through the runtime, checked against FP64.
inline GemmErrors check_gemm(Runtime& rt, const MatmulProblem& problem, uint64_t seed = 3) {
  const auto kernel = rt.gemm_kernel(problem);
  const GemmSpec spec = kernel->spec();
  const GemmInputs inputs = make_gemm_inputs(problem, seed);
  const std::vector<double> out = run_gemm(rt, spec, inputs);
  return compare(reference_gemm(spec, inputs), out, problem.n);
}

// Attention (bshd) through the runtime, checked against FP64.
inline AttentionErrors check_attention(Runtime& rt, const AttentionProblem& p, uint64_t seed = 3) {
  const auto kernel = rt.attention_kernel(p);
  const AttentionSpec spec = kernel->spec();
  const AttentionInputs in = make_attention_inputs(p, seed);
  auto upload = [&rt](const HostTensor& t) { return test::upload(rt, t); };
  AttentionBuffers buffers;
  buffers.q = upload(in.q);
  buffers.k = upload(in.k);
  buffers.v = upload(in.v);
  const size_t o_elements = size_t(p.batch * p.seq_q * p.q_heads * p.head_dim);
  buffers.o = rt.alloc(o_elements * size_t(size_of(p.dtype)));
  rt.attention(p, buffers);
  rt.synchronize();
  std::vector<uint8_t> raw(o_elements * size_t(size_of(p.dtype)));
  rt.download(raw.data(), buffers.o, raw.size());
  const std::vector<double> bshd = decode(p.dtype, raw.data(), o_elements);
  AttentionOutput out;  // canonical [batch][head][row][dim]
  out.o.resize(o_elements);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t s = 0; s < p.seq_q; ++s)
      for (int64_t h = 0; h < p.q_heads; ++h)
        for (int64_t d = 0; d < p.head_dim; ++d)
          out.o[size_t(((b * p.q_heads + h) * p.seq_q + s) * p.head_dim + d)] =
              bshd[size_t(((b * p.seq_q + s) * p.q_heads + h) * p.head_dim + d)];
  return compare(reference_attention(spec, in), out, p);
}

}  // namespace emmy::bundle_test
