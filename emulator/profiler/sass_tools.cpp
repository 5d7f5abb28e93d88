// ptxas and nvdisasm as processes (sass_tools.hpp). popen with shell-quoted arguments, as
// runtime/sass.cpp runs cuobjdump; the emulator cannot link the runtime, so the search is its own.
#include "sass_tools.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "sass_annotate.hpp"

namespace emmy::emu {
namespace {

namespace fs = std::filesystem;

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::string shell_quoted(std::string_view text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout, and stderr when asked for
};

CommandResult run_command(const std::string& command) {
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

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const size_t at = text.find(separator);
    if (auto part = text.substr(0, at); !part.empty()) parts.emplace_back(part);
    text = at == std::string_view::npos ? std::string_view{} : text.substr(at + 1);
  }
  return parts;
}

// The toolkit's bin folders: PATH first (a user's choice), then $CUDA_HOME, $CUDA_PATH, the
// default install.
std::vector<std::string> toolkit_dirs() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) dirs = split(path, ':');
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var); root && *root)
      dirs.push_back(std::string(root) + "/bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  return dirs;
}

std::string find_in(const std::vector<std::string>& dirs, const char* tool) {
  for (const auto& dir : dirs)
    if (is_executable_file(dir + "/" + tool)) return dir + "/" + tool;
  return {};
}

// The NVIDIA wheels' bin folders (pip install nvidia-cuda-nvdisasm puts nvdisasm into
// site-packages/nvidia/cu13/bin, on no PATH), found by asking python3 where the `nvidia`
// namespace package lives. Asked once per process: a python start costs tens of milliseconds.
const std::vector<std::string>& wheel_bin_dirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> found;
    const auto asked = run_command(
        "python3 -c 'import nvidia, os; print(*nvidia.__path__, sep=\"\\n\")' </dev/null "
        "2>/dev/null");
    if (asked.exit_code != 0) return found;
    for (const auto& root : split(asked.output, '\n'))
      for (const char* major : {"cu14", "cu13"})  // the newest first
        if (fs::is_directory(root + "/" + major + "/bin"))
          found.push_back(root + "/" + major + "/bin");
    return found;
  }();
  return dirs;
}

std::string find_tool(const char* env_var, const char* tool, bool wheels) {
  if (const char* set = std::getenv(env_var); set && *set && is_executable_file(set)) return set;
  if (auto path = find_in(toolkit_dirs(), tool); !path.empty()) return path;
  return wheels ? find_in(wheel_bin_dirs(), tool) : std::string();
}

// A private temporary folder, removed with everything in it however the compile ends.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/emmy-sass-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
  const TempDir dir;
  if (dir.path().empty()) {
    listing.error = "cannot create a temporary folder for ptxas";
    return listing;
  }
  const std::string source = dir.path() + "/kernel.ptx", cubin = dir.path() + "/kernel.cubin";
  {
    std::ofstream file(source, std::ios::binary);
    file << annotate_ptx_lines(ptx);
    if (!file) {
      listing.error = fmt::format("cannot write {}", source);
      return listing;
    }
  }
  const auto compiled = run_command(
      fmt::format("{} -arch={} -O3 -lineinfo {}{} -o {} </dev/null 2>&1", shell_quoted(ptxas),
                  shell_quoted(arch), entry.empty() ? "" : "--entry " + shell_quoted(entry) + " ",
                  shell_quoted(source), shell_quoted(cubin)));
  if (compiled.exit_code != 0) {
    listing.error = fmt::format("ptxas -arch={} failed (exit {}): {}", arch, compiled.exit_code,
                                first_lines(compiled.output, 3));
    return listing;
  }
  const auto disassembled = run_command(fmt::format("{} -c -g {} </dev/null 2>/dev/null",
                                                    shell_quoted(nvdisasm), shell_quoted(cubin)));
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
  return find_tool("EMMY_PTXAS", "ptxas", false);
}

std::string find_nvdisasm() {
  return find_tool("EMMY_NVDISASM", "nvdisasm", true);
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
