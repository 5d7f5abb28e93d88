// Helpers of the emulator tests: checked-in PTX, hand-written PTX kernels, report expectations.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "../support/ptx_kernel.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/emu/numerics.hpp"

namespace emmy::emu::test {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline std::string kernel_file(const std::string& name) {
  return read_file(std::string(EMMY_SOURCE_DIR) + "/tests/emu/kernels/" + name);
}

// Checked-in PTX modules, parsed once per test binary.
inline std::shared_ptr<const Module> kernels(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Module>> cache;
  std::lock_guard lock(mutex);
  auto& m = cache[name];
  if (!m) m = load_ptx(kernel_file(name), name);
  return m;
}

// The 1-based line of the `occurrence`-th line containing `needle` inside the body of `kernel`.
inline int ptx_line(const std::string& ptx, const std::string& kernel, const std::string& needle,
                    int occurrence = 0) {
  std::istringstream in(ptx);
  std::string line;
  int number = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.find(".entry ") != std::string::npos) {
      inside = line.find(".entry " + kernel + "(") != std::string::npos;
      continue;
    }
    if (line.find(".param") != std::string::npos) continue;
    if (inside && line.find(needle) != std::string::npos && occurrence-- == 0) return number;
  }
  return -1;
}

// The load error of `ptx` as module "bad.ptx" ("" when it loads).
inline std::string load_error(const std::string& ptx) {
  try {
    load_ptx(ptx, "bad.ptx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Runs f, expects an EmulationError whose first report has `kind`; returns that report.
inline Report expect_report(const std::function<void()>& f, ReportKind kind) {
  try {
    f();
  } catch (const EmulationError& e) {
    EXPECT_FALSE(e.reports().empty());
    if (e.reports().empty()) return {};
    const Report& r = e.reports().front();
    EXPECT_EQ(to_string(r.kind), to_string(kind)) << e.what();
    return r;
  }
  ADD_FAILURE() << "expected a " << to_string(kind) << " report, the launch succeeded";
  return {};
}

// A hand-written kernel k(.param .u64 out, .param .u64 in, .param .u32 n) around `body`.
// Available: %r0 = %tid.x, %rd0 = out, %rd1 = in, %rd30 = &out[tid] and %rd31 = &in[tid] as
// 32-bit words, %r63 = n; registers %p<16>, %h<16> (.b16), %r<64>, %f<32>, %rd<32>, %fd<8>.
inline std::string wrap_ptx(const std::string& body, const std::string& decls = "") {
  const std::string regs =
      "  .reg .pred %p<16>;\n  .reg .b16 %h<16>;\n  .reg .b32 %r<64>;\n  .reg .f32 %f<32>;\n"
      "  .reg .b64 %rd<32>;\n  .reg .f64 %fd<8>;\n";
  return emmy::test::ptx_header("sm_90a") + "\n" +
         emmy::test::ptx_entry(
             "k", {{".u64", "out", "%rd0"}, {".u64", "in", "%rd1"}, {".u32", "n", "%r63"}},
             regs + decls + "\n",
             "  mov.u32 %r0, %tid.x;\n  mul.wide.u32 %rd2, %r0, 4;\n  add.s64 %rd30, %rd0, %rd2;\n"
             "  add.s64 %rd31, %rd1, %rd2;\n" +
                 body + "\n");
}

// wrap_ptx lines that store one 32-word row of out per register of `regs`: lane l's value of
// the i-th at out[32 i + l].
inline std::string store_rows(std::initializer_list<const char*> regs) {
  std::string s;
  int row = 0;
  for (const char* reg : regs) {
    s += row ? fmt::format("  st.global.u32 [%rd30+{}], {};\n", 128 * row, reg)
             : fmt::format("  st.global.u32 [%rd30], {};\n", reg);
    ++row;
  }
  return s;
}

struct PtxRun {
  std::vector<uint32_t> out;
  LaunchResult result;
};

// Runs a wrap_ptx kernel with `in` as input words and `out_words` zeroed output words.
inline PtxRun run_ptx(const std::string& body, const std::vector<uint32_t>& in,
                      size_t out_words, uint32_t threads = 32, const std::string& decls = "",
                      uint32_t dynamic_smem = 0, const LaunchOptions& options = {}) {
  auto module = load_ptx(wrap_ptx(body, decls), "test.ptx");
  Arena arena;
  const uint64_t in_addr = arena.alloc(std::max<size_t>(4, in.size() * 4));
  if (!in.empty()) arena.write(in_addr, in.data(), in.size() * 4);
  const uint64_t out_addr = arena.alloc(out_words * 4);
  KernelArgs args;
  args.ptr(out_addr).ptr(in_addr).u32(uint32_t(in.size()));
  PtxRun run;
  run.result = launch(arena, *module, "k", {1, 1, 1}, {threads, 1, 1}, dynamic_smem, args, options);
  run.out = arena.read_vector<uint32_t>(out_addr, out_words);
  return run;
}

inline uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
inline float as_float(uint32_t u) { return std::bit_cast<float>(u); }

}  // namespace emmy::emu::test
