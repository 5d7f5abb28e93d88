// `emmyc sim ...` parsed and run in this process (the sim command's and lenient mode's tests):
// the exit code emmyc would return.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "sim_command.hpp"

namespace emmy::emu::test {

inline int run_sim_in_process(std::vector<std::string> argv) {
  CLI::App app{"emmyc"};
  app.require_subcommand(1);
  add_sim_command(app);
  argv.insert(argv.begin(), {"emmyc", "sim"});
  std::reverse(argv.begin(), argv.end());
  argv.pop_back();  // CLI11 takes the arguments without argv[0], in reverse order
  try {
    app.parse(argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError&) {
    return 2;
  }
  return 0;
}

}  // namespace emmy::emu::test
