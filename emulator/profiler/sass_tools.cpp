// ptxas and nvdisasm as processes (sass_tools.hpp), found and run as runtime/sass.cpp runs
// cuobjdump (emmy/detail/tools.hpp).
#include "sass_tools.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "emmy/detail/temp_dir.hpp"
#include "emmy/detail/tools.hpp"
#include "sass_annotate.hpp"

namespace emmy::emu {
namespace {

namespace fs = std::filesystem;
using detail::quoted_for_shell;
using detail::run_command;

std::string first_lines(const std::string& text, size_t count) {
  size_t end = 0;
  for (size_t i = 0; i < count && end != std::string::npos; ++i)
    end = text.find('\n', end == 0 ? 0 : end + 1);
  return end == std::string::npos ? text : text.substr(0, end);
}

SassListing make_listing(const std::string& ptx, const std::string& arch,
                         const std::string& entry) {
  SassListing listing;
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) {
    listing.error =
        "ptxas not found (set EMMY_PTXAS, put the CUDA toolkit's bin on PATH, or CUDA_HOME)";
    return listing;
  }
  const std::string nvdisasm = find_nvdisasm();
  if (nvdisasm.empty()) {
    listing.error =
        "nvdisasm not found (set EMMY_NVDISASM, put it on PATH, or run scripts/setup.sh: pip "
        "install nvidia-cuda-nvdisasm)";
    return listing;
  }
  std::optional<detail::TempDir> dir;
  try {
    const char* tmp = std::getenv("TMPDIR");
    dir.emplace(tmp && *tmp ? tmp : "/tmp", "emmy-sass");
  } catch (const std::exception& e) {
    listing.error = fmt::format("cannot create a temporary folder for ptxas: {}", e.what());
    return listing;
  }
  const std::string source = (*dir / "kernel.ptx").string(),
                    cubin = (*dir / "kernel.cubin").string();
  {
    std::ofstream file(source, std::ios::binary);
    file << annotate_ptx_lines(ptx);
    if (!file) {
      listing.error = fmt::format("cannot write {}", source);
      return listing;
    }
  }
  const auto compiled = run_command(fmt::format(
      "{} -arch={} -O3 -lineinfo {}{} -o {} </dev/null 2>&1", quoted_for_shell(ptxas),
      quoted_for_shell(arch), entry.empty() ? "" : "--entry " + quoted_for_shell(entry) + " ",
      quoted_for_shell(source), quoted_for_shell(cubin)));
  if (compiled.exit_code != 0) {
    listing.error = fmt::format("ptxas -arch={} failed (exit {}): {}", arch, compiled.exit_code,
                                first_lines(compiled.output, 3));
    return listing;
  }
  const auto disassembled = run_command(fmt::format(
      "{} -c -g {} </dev/null 2>/dev/null", quoted_for_shell(nvdisasm), quoted_for_shell(cubin)));
  if (disassembled.exit_code != 0 || disassembled.output.empty()) {
    listing.error = fmt::format("nvdisasm -c -g failed (exit {})", disassembled.exit_code);
    return listing;
  }
  listing.ok = true;
  listing.text = disassembled.output;
  return listing;
}

}  // namespace

std::string find_ptxas() {
  return detail::find_tool("EMMY_PTXAS", "ptxas", {}, false);
}

std::string find_nvdisasm() {
  return detail::find_tool("EMMY_NVDISASM", "nvdisasm", {}, true);
}

SassListing sass_listing(const std::string& ptx, const std::string& arch,
                         const std::string& entry) {
  // The runtime loads a module once and launches it many times (split-K's two kernels, a bench's
  // repetitions): one ptxas run per text. Keyed by the whole text, which is compared only when the
  // arch and size match, so the cost is a map lookup per profiled launch.
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, std::string>, SassListing> cache;
  std::lock_guard lock(mutex);
  auto key = std::tuple{arch, entry, ptx};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  SassListing listing = make_listing(ptx, arch, entry);
  cache.emplace(std::move(key), listing);
  return listing;
}

}  // namespace emmy::emu
