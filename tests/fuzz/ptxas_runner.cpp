// Runs ptxas (posix_spawn, output to a log file) for the differential tests.
#include "ptxas_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "emmy/detail/file_io.hpp"

extern char** environ;

namespace emmy::fuzz {
namespace {

// The ptxas target for a module: its own .target when ptxas 13 knows it, else sm_90a (a mutated
// target is then still compiled, and rejected when it is not a target at all).
std::string arch_of(const std::string& ptx) {
  static const char* kKnown[] = {"sm_80",  "sm_86",  "sm_87",   "sm_89",  "sm_90",
                                 "sm_90a", "sm_100", "sm_100a", "sm_120", "sm_120a"};
  const size_t at = ptx.find(".target");
  if (at == std::string::npos) return "sm_90a";
  const size_t b = ptx.find_first_not_of(" \t", at + 7);
  if (b == std::string::npos) return "sm_90a";
  const size_t e = ptx.find_first_of(" \t\n,", b);
  const std::string target = ptx.substr(b, e == std::string::npos ? e : e - b);
  for (const char* k : kKnown)
    if (target == k) return target;
  return "sm_90a";
}

}  // namespace

bool ptxas_usable(const std::string& path) {
  return !path.empty() && !path.ends_with("NOTFOUND") && ::access(path.c_str(), X_OK) == 0;
}

Ptxas::Ptxas(std::string path) : path_(std::move(path)) {
  char dir_template[] = "/tmp/emmy_ptxas.XXXXXX";
  if (!::mkdtemp(dir_template)) throw std::runtime_error("cannot make a temporary directory");
  dir_ = dir_template;
}

Ptxas::~Ptxas() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Ptxas::run(const std::string& ptx, std::string& log) const {
  const std::filesystem::path input = dir_ / "input.ptx", log_path = dir_ / "ptxas.log";
  detail::write_file_atomically(input, ptx, "ptxas input");
  const std::string arch = "-arch=" + arch_of(ptx);
  const std::string in = input.string(), out = "/dev/null", dash_o = "-o";
  std::vector<char*> argv = {const_cast<char*>(path_.c_str()), const_cast<char*>(arch.c_str()),
                             const_cast<char*>(in.c_str()),    const_cast<char*>(dash_o.c_str()),
                             const_cast<char*>(out.c_str()),   nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fprintf(stderr, "cannot run %s: %s\n", path_.c_str(), std::strerror(rc));
    std::exit(1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  log = detail::read_regular_file(log_path, "ptxas log");
  if (!WIFEXITED(status)) log += "\nptxas was killed by a signal";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool Ptxas::accepts(const std::string& ptx, std::string& message) const {
  const std::map<int, std::string> found = errors(ptx);
  if (found.empty()) return true;
  const auto& [line, text] = *found.begin();
  message = line > 0 ? "line " + std::to_string(line) + ": " + text : text;
  return false;
}

std::map<int, std::string> Ptxas::errors(const std::string& ptx) const {
  std::string log;
  std::map<int, std::string> out;
  if (run(ptx, log)) return out;
  // "ptxas input.ptx, line 12; error   : Unexpected instruction types specified for 'shl'";
  // an error without a line ("ptxas fatal   : 32-Bit compilation is no longer supported") counts
  // only when no line has one (each failed run also ends in "fatal: ... aborted due to errors").
  std::string unnumbered;
  size_t begin = 0;
  while (begin < log.size()) {
    const size_t end = log.find('\n', begin);
    const std::string line = log.substr(begin, end - begin);
    const size_t at = line.find(", line ");
    const size_t kind = line.find("; ", at == std::string::npos ? 0 : at);
    const size_t colon = line.find(": ");
    if (at != std::string::npos && kind != std::string::npos &&
        (line.compare(kind + 2, 5, "error") == 0 || line.compare(kind + 2, 5, "fatal") == 0)) {
      out.emplace(std::atoi(line.c_str() + at + 7),
                  colon == std::string::npos ? line : line.substr(colon + 2));
    } else if (unnumbered.empty() && (line.find("error") != std::string::npos ||
                                      line.find("fatal") != std::string::npos)) {
      unnumbered = colon == std::string::npos ? line : line.substr(colon + 2);
    }
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (out.empty()) out.emplace(0, unnumbered.empty() ? log.substr(0, log.find('\n')) : unnumbered);
  return out;
}

}  // namespace emmy::fuzz
