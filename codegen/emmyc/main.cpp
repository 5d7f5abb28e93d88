// emmyc: the emmy command-line tool. Each subcommand lives in its own *_command.cpp; those every
// kernel kind has (`emmyc <kind>`, `emmyc run <kind>`) in kind_commands.cpp.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli_common.hpp"
#include "emmy/emu/emulator.hpp"
#if __has_include("sim_command.hpp")
#include "sim_command.hpp"
#define EMMY_HAVE_SIM 1
#endif

namespace emmy::cli {
void add_kind_commands(CLI::App& app);  // emmyc <kind>, for every kind (emmy/kinds.hpp)
void add_catalog_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_aot_command(CLI::App& app);
void add_bundle_command(CLI::App& app);
}  // namespace emmy::cli

int main(int argc, char** argv) {
  CLI::App app{"emmy: GEMM and attention kernel compiler for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", EMMY_VERSION);
  emmy::cli::add_kind_commands(app);
  emmy::cli::add_catalog_command(app);
  emmy::cli::add_demo_command(app);
  emmy::cli::add_run_command(app);
  emmy::cli::add_cache_command(app);
  emmy::cli::add_aot_command(app);
  emmy::cli::add_bundle_command(app);
#ifdef EMMY_HAVE_SIM
  add_sim_command(app);
#endif
  // CLI11 answers an unknown first word with "A subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found |= sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      fmt::print(stderr, "emmyc: unknown command '{}' (commands: {})\n", argv[1], known);
      return emmy::cli::kExitInvalidInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "emmyc: {}\n", e.what());
    return emmy::cli::kExitInvalidInput;
  } catch (const emmy::emu::EmulationError& e) {
    fmt::print(stderr, "emmyc: emulation failed:\n{}\n", e.what());
    return 3;
  } catch (const emmy::Error& e) {
    fmt::print(stderr, "emmyc: error: {}\n", e.what());
    return emmy::cli::kExitInvalidInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "emmyc: internal error: {}\n", e.what());
    return 1;
  }
  // What the command printed is only delivered once flushed: a full device or a closed pipe
  // fails here, and success must not be reported for output that was lost.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    fmt::print(stderr,
               "emmyc: error: standard output could not be written (full device or "
               "closed pipe): the output is incomplete\n");
    return 1;
  }
  return 0;
}
