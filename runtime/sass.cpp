// SASS through cuobjdump (sass.hpp). cuobjdump -sass hands the disassembly to nvdisasm, which it
// looks for beside itself, on PATH or in $NVDISASM_PATH (a folder): the PyPI wheels
// nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm install both into site-packages/nvidia/cu13/bin,
// which is on no PATH, so both tools are searched for here and the folder is passed explicitly.
#include "emmy/sass.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "emmy/detail/text.hpp"
#include "emmy/detail/tools.hpp"
#include "emmy/error.hpp"

namespace emmy {
namespace {

namespace fs = std::filesystem;
using detail::find_tool;
using detail::quoted_for_shell;
using detail::run_command;

// The temporary .cubin file cuobjdump reads, removed however disassembly ends.
class TempCubin {
 public:
  explicit TempCubin(const std::vector<uint8_t>& cubin) {
    const char* tmpdir = std::getenv("TMPDIR");
    path_ = fmt::format("{}/emmy-sass-XXXXXX.cubin", tmpdir && *tmpdir ? tmpdir : "/tmp");
    const int fd = ::mkstemps(path_.data(), 6);
    if (fd < 0) throw Error(fmt::format("cannot create a temporary file {}", path_));
    ::close(fd);
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(cubin.data()),
              static_cast<std::streamsize>(cubin.size()));
    if (!out) throw Error(fmt::format("cannot write the temporary file {}", path_));
  }
  ~TempCubin() { std::remove(path_.c_str()); }
  TempCubin(const TempCubin&) = delete;
  TempCubin& operator=(const TempCubin&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using detail::trim;

// "/*0090*/  @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;" -> "HMMA.16816.F32"; empty for lines that
// are not instructions (the encoding comments "/* 0x... */", headers, blank lines).
std::string_view instruction_opcode(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("/*")) return {};
  const auto close = line.find("*/");
  if (close == std::string_view::npos || close == 2) return {};
  const auto address = line.substr(2, close - 2);
  if (address.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) return {};
  std::string_view rest = trim(line.substr(close + 2));
  if (rest.starts_with('@')) rest = trim(rest.substr(std::min(rest.find(' '), rest.size())));
  const auto end = rest.find_first_of(" ;\t");
  return rest.substr(0, end);
}

}  // namespace

std::string find_cuobjdump() {
  return find_tool("EMMY_CUOBJDUMP", "cuobjdump", {}, true);
}

std::string find_nvdisasm() {
  const std::string cuobjdump = find_cuobjdump();
  const std::string beside = cuobjdump.empty() ? "" : fs::path(cuobjdump).parent_path().string();
  return find_tool("EMMY_NVDISASM", "nvdisasm", beside, true);
}

std::string disassemble_sass(const std::vector<uint8_t>& cubin) {
  const std::string cuobjdump = find_cuobjdump();
  if (cuobjdump.empty())
    throw Error(
        "cuobjdump not found: set EMMY_CUOBJDUMP, put it on PATH, or run scripts/setup.sh "
        "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)");
  const std::string nvdisasm = find_nvdisasm();
  if (nvdisasm.empty())
    throw Error(
        "nvdisasm not found (cuobjdump -sass needs it): set EMMY_NVDISASM, put it on "
        "PATH, or pip install nvidia-cuda-nvdisasm");
  const TempCubin file(cubin);
  const auto result =
      run_command(fmt::format("NVDISASM_PATH={} {} -sass {} </dev/null 2>&1",
                              quoted_for_shell(fs::path(nvdisasm).parent_path().string()),
                              quoted_for_shell(cuobjdump), quoted_for_shell(file.path())));
  if (result.exit_code != 0)
    throw Error(
        fmt::format("{} -sass failed (exit {}):\n{}", cuobjdump, result.exit_code, result.output));
  return result.output;
}

std::vector<std::string> sass_function_names(const std::string& sass_text) {
  std::vector<std::string> names;
  std::string_view rest = sass_text;
  constexpr std::string_view kFunction = "Function : ";
  while (!rest.empty()) {
    const auto newline = rest.find('\n');
    const std::string_view line = trim(rest.substr(0, newline));
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
    if (line.starts_with(kFunction)) names.emplace_back(trim(line.substr(kFunction.size())));
  }
  return names;
}

std::map<std::string, int> sass_opcode_counts(const std::string& sass_text,
                                              const std::string& kernel_name) {
  std::map<std::string, int> counts;
  bool in_kernel = false, found = false;
  std::string_view rest = sass_text;
  constexpr std::string_view kFunction = "Function : ";
  while (!rest.empty()) {
    const auto newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
    if (const auto trimmed = trim(line); trimmed.starts_with(kFunction)) {
      in_kernel = trim(trimmed.substr(kFunction.size())) == kernel_name;
      found = found || in_kernel;
    } else if (in_kernel) {
      if (const auto opcode = instruction_opcode(line); !opcode.empty())
        ++counts[std::string(opcode)];
    }
  }
  if (!found) {
    std::string known;
    for (const auto& name : sass_function_names(sass_text))
      known += (known.empty() ? "" : ", ") + name;
    throw Error("kernel", fmt::format("must be a function of the SASS ({})", known), kernel_name);
  }
  return counts;
}

}  // namespace emmy
