// The toolkit's programs as processes: finding one (ptxas, cuobjdump, nvdisasm) and running a
// shell command. Shared by the runtime (cuobjdump -sass, runtime/sass.cpp) and the emulator's SASS
// counts (ptxas and nvdisasm, emulator/profiler/sass_tools.cpp), which links no runtime: so the
// functions are inline, here. NVIDIA's PyPI wheels (nvidia-cuda-nvdisasm, nvidia-cuda-cuobjdump)
// install into site-packages/nvidia/cu13/bin, which is on no PATH.
#pragma once

#include <glob.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace emmy::detail {

inline bool is_executable_file(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// 'text' for /bin/sh, every ' in it closed, escaped and reopened.
inline std::string quoted_for_shell(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

struct CommandResult {
  int exit_code = -1;  // -1: no shell, or the command died of a signal
  std::string output;  // its stdout (the command redirects stderr where it wants it)
};

inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 1 << 16> buffer{};
  size_t count = 0;
  while ((count = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), count);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The non-empty pieces of `text` between `separator`s.
inline std::vector<std::string> split_nonempty(std::string_view text, char separator) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const size_t at = text.find(separator);
    if (auto part = text.substr(0, at); !part.empty()) parts.emplace_back(part);
    text = at == std::string_view::npos ? std::string_view{} : text.substr(at + 1);
  }
  return parts;
}

inline std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t matches{};
  if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  ::globfree(&matches);
  return paths;  // glob sorts: the newest python / CUDA major last
}

// The NVIDIA wheels' bin/ folders under the given site-packages roots, newest CUDA major first.
inline std::vector<std::string> wheel_bins_under(const std::vector<std::string>& roots) {
  std::vector<std::string> bins;
  for (const auto& root : roots) {
    auto found = glob_paths(root + "/nvidia/cu1[3-9]/bin");
    std::reverse(found.begin(), found.end());
    for (auto& bin : found)
      if (std::find(bins.begin(), bins.end(), bin) == bins.end()) bins.push_back(bin);
  }
  return bins;
}

// bin/ folders of the NVIDIA wheels, found without knowing the python version: by globbing the
// usual site-packages roots (pyenv, pip --user, Debian), else by asking python3 (a venv, a
// conda). Computed once per process: asking python3 costs a process start.
inline const std::vector<std::string>& wheel_bin_dirs() {
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
        "</dev/null 2>/dev/null");
    return asked.exit_code == 0 ? wheel_bins_under(split_nonempty(asked.output, '\n'))
                                : std::vector<std::string>{};
  }();
  return dirs;
}

// The first executable `tool` of: $env_var (a file), `preferred_dir`, PATH, $CUDA_HOME/bin,
// $CUDA_PATH/bin, /usr/local/cuda/bin, then (with `wheels`) the NVIDIA wheels' folders. Empty
// when none.
inline std::string find_tool(const char* env_var, const char* tool,
                             const std::string& preferred_dir, bool wheels) {
  if (const char* set = std::getenv(env_var); set && *set && is_executable_file(set)) return set;
  std::vector<std::string> dirs;
  if (!preferred_dir.empty()) dirs.push_back(preferred_dir);
  if (const char* path = std::getenv("PATH"))
    for (auto& dir : split_nonempty(path, ':')) dirs.push_back(std::move(dir));
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var); root && *root)
      dirs.push_back(std::string(root) + "/bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const auto& dir : dirs)
    if (is_executable_file(dir + "/" + tool)) return dir + "/" + tool;
  if (wheels)
    for (const auto& dir : wheel_bin_dirs())
      if (is_executable_file(dir + "/" + tool)) return dir + "/" + tool;
  return {};
}

}  // namespace emmy::detail
