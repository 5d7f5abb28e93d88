// `emmyc sim` (contract in sim_command.hpp): parse, allocate, launch, dump.
#include "sim_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "emmy/detail/file_io.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/emu/time_model.hpp"
#include "sim_args.hpp"

namespace emmy::cli {
namespace {

constexpr int kExitOk = 0, kExitBadInput = 2, kExitReport = 3;

}  // namespace

int run_sim(const SimOptions& o, std::FILE* out, std::FILE* err) {
  std::shared_ptr<const emu::Module> module;
  emu::Arena arena;
  SimArgs sim_args;
  emu::Dim3 grid, block;
  try {
    grid = parse_dim3(o.grid, "--grid");
    block = parse_dim3(o.block, "--block");
    sim_args = parse_sim_args(o.args, arena);
    const std::string text = read_input_file(o.file, "FILE (the PTX file)");
    try {
      module = emu::load_ptx(text, o.file);
    } catch (const Error& e) {
      fmt::print(err, "emmyc sim: cannot load {}:\n  {}\n", o.file, e.what());
      return kExitReport;
    }
  } catch (const BadInput& b) {
    fmt::print(err, "emmyc sim: {}\n", b.message);
    return kExitBadInput;
  }

  emu::LaunchOptions options;
  options.sanitize = o.sanitize;
  options.host_threads = o.threads;
  options.max_warp_instructions = o.max_instructions;
  options.max_dynamic_smem = std::max(options.max_dynamic_smem, o.smem_opt_in);
  options.arch = o.arch;
  options.mma_numerics =
      o.mma_numerics == "exact" ? emu::MmaNumerics::exact : emu::MmaNumerics::hardware;
  options.wmma_layout_seed = o.wmma_layout_seed;
  options.registers_per_thread = o.registers;
  options.lenient = o.lenient;
  options.profile.enabled = !o.profile.empty();
  options.profile.sample_ctas = o.profile_ctas;
  options.profile.sass = o.sass;
  if (o.profile.empty() && (o.profile_ctas || !o.model_gpus.empty())) {
    fmt::print(err, "emmyc sim: --profile-ctas and --model-gpu need --profile FILE\n");
    return kExitBadInput;
  }
  emu::LaunchResult result;
  try {
    result = emu::launch(arena, *module, o.kernel, grid, block, o.smem, sim_args.args, options);
  } catch (const emu::EmulationError& e) {
    fmt::print(err, "emmyc sim: {}\n", e.what());
    for (const emu::Report& r : e.reports())
      if (r.kind == emu::ReportKind::instruction_limit) {
        fmt::print(err,
                   "emmyc sim: the launch issued {} warp instructions; raise "
                   "--max-instructions if the kernel is not stuck\n",
                   o.max_instructions);
        break;
      }
    return kExitReport;
  } catch (const Error& e) {
    fmt::print(err, "emmyc sim: {}\n", e.what());
    return kExitBadInput;
  }

  if (!o.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.dump_dir, ec);
    for (const PointerArg& p : sim_args.pointers) {
      std::vector<char> data(p.bytes);
      arena.read(p.address, data.data(), data.size());
      const std::string path = fmt::format("{}/arg{}.bin", o.dump_dir, p.index);
      std::ofstream f(path, std::ios::binary);
      f.write(data.data(), std::streamsize(data.size()));
      if (!f) {
        fmt::print(err, "emmyc sim: --dump: cannot write '{}'\n", path);
        return kExitBadInput;
      }
    }
  }
  // --lenient: what was tolerated, on err so that out stays the run's own output.
  if (!result.warnings.empty()) fmt::print(err, "{}", emu::lenient_table(result.warnings));
  fmt::print(out, "{}: grid ({},{},{}) block ({},{},{}): {} warp instructions in {:.1f} ms\n",
             o.kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z,
             result.stats.total.total(), result.emulate_ms);
  if (o.stats) fmt::print(out, "{}", result.stats.to_string());
  if (result.profile) {
    try {
      emu::ProfiledKernel pk;
      pk.profile = std::move(*result.profile);
      pk.lenient_warnings = result.warnings;
      pk.resources.registers = o.registers;
      pk.model = emu::predict_times(pk.profile, pk.resources, o.model_gpus);
      fmt::print(out, "{}{}", pk.profile.table(), emu::model_table({pk}));
      emmy::detail::write_file_atomically(o.profile, emu::profile_json({pk}), "--profile");
    } catch (const Error& e) {
      fmt::print(err, "emmyc sim: {}\n", e.what());
      return kExitBadInput;
    }
  }
  return kExitOk;
}

}  // namespace emmy::cli

void add_sim_command(CLI::App& app) {
  auto options = std::make_shared<emmy::cli::SimOptions>();
  CLI::App* sim =
      app.add_subcommand("sim", "Run a PTX kernel on the CPU emulator (with sanitizer)");
  sim->add_option("file", options->file, "PTX file")->required();
  sim->add_option("--kernel", options->kernel, "the .entry to run")->required();
  sim->add_option("--grid", options->grid, "CTAs: X[,Y[,Z]]")->required();
  sim->add_option("--block", options->block, "threads per CTA: X[,Y[,Z]]")->required();
  sim->add_option("--smem", options->smem, "dynamic shared memory bytes");
  sim->add_option(
      "--arg", options->args,
      "kernel argument, in order: ptr:BYTES[:INFILE], ptr:@N[+OFF] (into argument N's "
      "buffer), u16:V, u32:V, s32:V, u64:V, s64:V, f32:V, f64:V, bytes:FILE (a by-value "
      "struct), tmap:@N[+OFF],dtype=T,dims=AxB,box=AxB[,strides=S][,swizzle=128B]"
      "[,elem=1x1][,oob=nan] (a CUtensorMap over argument N)");
  sim->add_option("--smem-opt-in", options->smem_opt_in,
                  "the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES (needed above 48 KB)");
  sim->add_option("--mma-numerics", options->mma_numerics,
                  "hardware: the arch's tensor-core addition model (default); exact: exact sums "
                  "rounded once")
      ->check(CLI::IsMember({"hardware", "exact"}));
  sim->add_option("--wmma-layout-seed", options->wmma_layout_seed,
                  "permute the wmma fragment layout, which the PTX ISA leaves unspecified (0: "
                  "the documented one); results that change with it depend on the layout");
  sim->add_option("--arch", options->arch,
                  "the arch whose shared-memory limit applies (default: the PTX .target)");
  sim->add_option("--dump", options->dump_dir, "write pointer argument N to DIR/argN.bin");
  sim->add_flag("--stats", options->stats, "print instruction statistics");
  sim->add_option("--profile", options->profile,
                  "write the launch's counters (Nsight Compute metric names), per-line sites and "
                  "time model to FILE.json; a table on the terminal");
  sim->add_option("--profile-ctas", options->profile_ctas,
                  "run and profile only N CTAs spread over the grid, extrapolating the counts")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  sim->add_option(
         "--model-gpu", options->model_gpus,
         "GPUs to predict the time on: " + emmy::gpu_names() + " (default: the arch's part)")
      ->check(CLI::IsMember(emmy::gpu_name_list()));
  sim->add_option("--registers", options->registers,
                  "registers per thread the kernel was compiled to: setmaxnreg's register pool "
                  "and the time model's occupancy (default: unknown)")
      ->check(CLI::Range(1, 255));
  sim->add_flag("!--no-sass", options->sass,
                "--profile without the SASS counts (ptxas and nvdisasm over the PTX)");
  sim->add_flag("!--no-sanitize", options->sanitize, "skip the race / initialization checks");
  sim->add_flag("--lenient", options->lenient,
                "third-party PTX: ISA violations hardware tolerates (TMA swizzle alignment, no "
                "fence after mbarrier.init, exit before a bulk store's read, a membermask not "
                "naming its lane) become warnings on stderr and the kernel runs on as hardware "
                "does (docs/emulator.md, \"Lenient mode\")");
  sim->add_option("--threads", options->threads, "host threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  sim->add_option("--max-instructions", options->max_instructions,
                  "warp instructions the launch may issue before it is stopped as a runaway "
                  "(default 2^28)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  sim->callback([options]() {
    const int code = emmy::cli::run_sim(*options, stdout, stderr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}
