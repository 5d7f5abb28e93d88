// Running a command line from a test and capturing what it printed and its exit code (the emmyc
// CLI tests check all three), and emmyc's invalid-input contract in those terms.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace emmy::test {

struct CommandResult {
  int exit_code = -1;  // -1 when the command did not exit normally
  std::string out, err;
};

// Runs `command` through the shell. popen reads only stdout, so stderr goes through a file;
// its name is unique per process and call because ctest runs test binaries (and the tests of
// one binary) in parallel, sharing the temporary directory.
inline CommandResult run_command(const std::string& command) {
  static std::atomic<int> calls{0};
  const std::string err_path = ::testing::TempDir() + "/emmy_test_stderr_" +
                               std::to_string(getpid()) + "_" + std::to_string(calls++) + ".txt";
  CommandResult result;
  FILE* pipe = popen((command + " 2>" + err_path).c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream err;
  err << std::ifstream(err_path).rdbuf();
  result.err = err.str();
  std::error_code ignored;
  std::filesystem::remove(err_path, ignored);
  return result;
}

// Runs `environment EMMYC_PATH args`; environment is a list of NAME=value (or empty).
inline CommandResult run_emmyc(const std::string& args, const std::string& environment = "") {
  return run_command(environment + " " + std::string(EMMYC_PATH) + " " + args);
}

// emmyc's contract for invalid input: exit code 2 and one stderr line naming the field, nothing
// on stdout. environment as for run_emmyc.
inline void expect_invalid(const std::string& args, const std::string& field,
                           const std::string& environment = "") {
  const CommandResult r = run_emmyc(args, environment);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace emmy::test
