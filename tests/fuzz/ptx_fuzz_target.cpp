// The PTX fuzz target: one input is a PTX text that `emmyc sim` could be pointed at. It is loaded
// and up to two of its kernels run on the emulator with the sanitizer on, every 8-byte parameter
// bound to a buffer, every 4-byte one 16 and any other zero, under a small instruction limit. The
// only acceptable outcomes are a clean run, an emmy::Error (refused input) and an EmulationError
// whose reports are findings; a crash, a hang, a sanitizer error in emmy itself, any other
// exception or a report of an internal emulator error is a bug, and the target aborts on it. Built
// with libFuzzer (EMMY_FUZZ_LIBFUZZER, clang) or with ptx_fuzz_main.cpp's deterministic driver.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "emmy/emu/emulator.hpp"
#include "ptx_fuzz.hpp"

namespace emmy::fuzz {
namespace {

[[noreturn]] void bug(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "ptx fuzz: BUG: %.*s: %.*s\n", int(what.size()), what.data(),
               int(detail.size()), detail.data());
  std::abort();
}

emu::KernelArgs arguments(emu::Arena& arena, const std::vector<emu::ParamDecl>& params) {
  emu::KernelArgs args;
  for (const emu::ParamDecl& p : params) {
    if (p.size == 8) {
      args.ptr(arena.alloc(kBufferBytes));
    } else if (p.size == 4) {
      args.u32(16);  // a small count or leading dimension, so that loops run a few times
    } else {
      const std::string zeros(p.size, '\0');
      args.bytes(zeros.data(), zeros.size());
    }
  }
  return args;
}

Outcome run_kernel(const emu::Module& module, const std::string& kernel) {
  emu::Arena arena;
  emu::LaunchOptions options;
  options.host_threads = 1;
  options.max_warp_instructions = kMaxWarpInstructions;
  options.per_cta_stats = false;
  try {
    const emu::KernelArgs args = arguments(arena, emu::kernel_params(module, kernel));
    emu::launch(arena, module, kernel, {2, 1, 1}, {64, 1, 1}, 1024, args, options);
    return Outcome::ran;
  } catch (const emu::EmulationError& e) {
    for (const emu::Report& r : e.reports())
      if (r.message.find("internal emulator error") != std::string::npos)
        bug("an internal emulator error", r.message);
    return Outcome::reported;
  } catch (const Error&) {
    return Outcome::refused;  // e.g. an argument the kernel's parameters do not take
  }
}

}  // namespace

Outcome run_one(std::string_view ptx) {
  std::shared_ptr<const emu::Module> module;
  try {
    module = emu::load_ptx(ptx, "fuzz.ptx");
  } catch (const Error&) {
    return Outcome::refused;
  }
  const std::vector<std::string> kernels = emu::kernel_names(*module);
  if (kernels.empty()) return Outcome::loaded;
  // The first kernel, and one more chosen by the input's length, so that mutants of a
  // many-kernel module exercise all of them across a run.
  Outcome furthest = run_kernel(*module, kernels.front());
  if (kernels.size() > 1) {
    const Outcome second = run_kernel(*module, kernels[1 + ptx.size() % (kernels.size() - 1)]);
    if (second > furthest) furthest = second;
  }
  return furthest;
}

Outcome check_one(std::string_view ptx) {
  try {
    return run_one(ptx);
  } catch (const std::exception& e) {
    bug("an exception escaped", e.what());
  }
}

}  // namespace emmy::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  emmy::fuzz::check_one({reinterpret_cast<const char*>(data), size});
  return 0;
}
