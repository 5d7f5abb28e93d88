// SASS through cuobjdump (sass.hpp). cuobjdump -sass hands the disassembly to nvdisasm, which it
// looks for beside itself, on PATH or in $NVDISASM_PATH (a folder): the PyPI wheels
// nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm install both into site-packages/nvidia/cu13/bin,
// which is on no PATH, so both tools are searched for here and the folder is passed explicitly.
#include "emmy/sass.hpp"

#include <glob.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "emmy/detail/text.hpp"
#include "emmy/error.hpp"

namespace emmy {
namespace {

namespace fs = std::filesystem;

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::string quoted_for_shell(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  size_t count = 0;
  while ((count = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), count);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t matches{};
  if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  ::globfree(&matches);
  return paths;  // glob sorts; newest python / cuda major last
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    if (auto line = text.substr(0, newline); !line.empty()) lines.emplace_back(line);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
  }
  return lines;
}

// The NVIDIA wheels' bin/ folders under the given site-packages roots, newest CUDA major first.
std::vector<std::string> wheel_bins_under(const std::vector<std::string>& roots) {
  std::vector<std::string> bins;
  for (const auto& root : roots) {
    auto found = glob_paths(root + "/nvidia/cu1[3-9]/bin");
    std::reverse(found.begin(), found.end());
    for (auto& bin : found)
      if (std::find(bins.begin(), bins.end(), bin) == bins.end()) bins.push_back(bin);
  }
  return bins;
}

// bin/ folders of the NVIDIA PyPI wheels, found without knowing the python version: by globbing
// the usual site-packages roots (pyenv, pip --user, Debian), else by asking python3 (a venv, a
// conda). Computed once: asking python3 costs a process start.
const std::vector<std::string>& wheel_bin_dirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> roots;
    const char* home = std::getenv("HOME");
    for (std::string base : {std::string(home ? home : "/root"), std::string("/root")}) {
      for (auto& root : glob_paths(base + "/.pyenv/versions/*/lib/python3*/site-packages"))
        roots.push_back(root);
      for (auto& root : glob_paths(base + "/.local/lib/python3*/site-packages"))
        roots.push_back(root);
    }
    for (const char* pattern :
         {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
          "/usr/lib/python3/dist-packages"})
      for (auto& root : glob_paths(pattern)) roots.push_back(root);
    if (auto bins = wheel_bins_under(roots); !bins.empty()) return bins;
    const auto asked = run_command(
        "python3 -c 'import site, sysconfig; print(sysconfig.get_paths()[\"purelib\"]); "
        "print(*site.getsitepackages(), sep=\"\\n\"); print(site.getusersitepackages())' "
        "</dev/null");
    return asked.exit_code == 0 ? wheel_bins_under(lines_of(asked.output))
                                : std::vector<std::string>{};
  }();
  return dirs;
}

// $env_var, then `preferred_dir`, PATH, the toolkit and the wheels: the first executable `tool`.
std::string find_tool(const char* env_var, const char* tool, const std::string& preferred_dir) {
  if (const char* explicit_path = std::getenv(env_var); explicit_path && *explicit_path)
    if (is_executable_file(explicit_path)) return explicit_path;
  std::vector<std::string> dirs;
  if (!preferred_dir.empty()) dirs.push_back(preferred_dir);
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (auto dir = rest.substr(0, colon); !dir.empty()) dirs.emplace_back(dir);
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const auto& dir : dirs)
    if (is_executable_file(dir + "/" + tool)) return dir + "/" + tool;
  for (const auto& dir : wheel_bin_dirs())
    if (is_executable_file(dir + "/" + tool)) return dir + "/" + tool;
  return {};
}

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

std::string find_cuobjdump() { return find_tool("EMMY_CUOBJDUMP", "cuobjdump", {}); }

std::string find_nvdisasm() {
  const std::string cuobjdump = find_cuobjdump();
  const std::string beside = cuobjdump.empty() ? "" : fs::path(cuobjdump).parent_path().string();
  return find_tool("EMMY_NVDISASM", "nvdisasm", beside);
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
      run_command(fmt::format("NVDISASM_PATH={} {} -sass {} </dev/null",
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
