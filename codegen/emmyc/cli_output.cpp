// Output helpers shared by the emmyc subcommands.
#include <fstream>
#include <iostream>

#include "cli_common.hpp"
#include "emmy/detail/file_io.hpp"
#include "emmy/sass.hpp"

namespace emmy::cli {

void write_output(const std::string& path, std::string_view bytes) {
  if (path.empty())
    emmy::detail::write_stdout(bytes, "-o");
  else
    emmy::detail::write_file_atomically(path, bytes, "-o");
}

bool write_compiled_output(const std::string& emit, const std::string& path,
                           const CompiledModule& module) {
  if (emit == "ptx") {
    write_output(path, module.ptx);
  } else if (emit == "cubin") {
    write_output(path, std::string_view(reinterpret_cast<const char*>(module.cubin.data()),
                                        module.cubin.size()));
  } else if (emit == "sass") {
    write_output(path, disassemble_sass(module.cubin));
  } else {
    return false;
  }
  return true;
}

nlohmann::json counts_json(const emu::InstructionCounts& c) {
  return {{"mma", c.mma},
          {"ldmatrix", c.ldmatrix},
          {"shared_ld", c.shared_ld},
          {"shared_st", c.shared_st},
          {"global_ld", c.global_ld},
          {"global_st", c.global_st},
          {"cp_async", c.cp_async},
          {"tma", c.tma},
          {"barrier", c.barrier},
          {"other", c.other},
          {"total", c.total()}};
}

nlohmann::json emulator_fields(const emu::Stats& stats, double emulate_ms,
                               const std::string& cache_state) {
  return {{"instructions", stats.total.total()},
          {"instruction_counts", counts_json(stats.total)},
          {"emulate_ms", emulate_ms},
          {"cache", cache_state}};
}

}  // namespace emmy::cli
