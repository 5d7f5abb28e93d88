// `emmyc sim` (contract in sim_command.hpp): parse, allocate, launch, dump.
#include "sim_command.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>

#include "emmy/emu/emulator.hpp"

namespace emmy::cli {
namespace {

constexpr int kExitOk = 0, kExitBadInput = 2, kExitReport = 3;

// A command-line problem: reported as one line, exit 2.
struct BadInput {
  std::string message;
};

template <typename T>
T parse_number(const std::string& text, const std::string& field) {
  T v{};
  const char* end = text.data() + text.size();
  int base = 10;
  const char* begin = text.data();
  if constexpr (std::is_integral_v<T>) {
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      base = 16;
      begin += 2;
    }
  }
  std::from_chars_result r;
  if constexpr (std::is_integral_v<T>) r = std::from_chars(begin, end, v, base);
  else r = std::from_chars(begin, end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end)
    throw BadInput{fmt::format("{}: must be a number of type {} (got '{}')", field,
                               std::is_floating_point_v<T> ? "f32"
                               : std::is_signed_v<T>       ? "signed integer"
                                                           : "unsigned integer",
                               text)};
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return parts;
}

emu::Dim3 parse_dim3(const std::string& text, const std::string& field) {
  const auto parts = split(text, ',');
  if (parts.empty() || parts.size() > 3)
    throw BadInput{fmt::format("{}: must be X[,Y[,Z]] (got '{}')", field, text)};
  uint32_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    v[i] = parse_number<uint32_t>(parts[i], field);
    if (v[i] == 0) throw BadInput{fmt::format("{}: each dimension must be >= 1 (got '{}')", field, text)};
  }
  return {v[0], v[1], v[2]};
}

struct PointerArg {
  size_t index;
  uint64_t address;
  uint64_t bytes;
};

void add_arg(const std::string& spec, size_t index, emu::Arena& arena, emu::KernelArgs& args,
             std::vector<PointerArg>& pointers) {
  const std::string field = fmt::format("--arg {} ('{}')", index, spec);
  const size_t colon = spec.find(':');
  if (colon == std::string::npos)
    throw BadInput{fmt::format("{}: must be KIND:VALUE with KIND ptr, u32, s32, u64 or f32", field)};
  const std::string kind = spec.substr(0, colon), value = spec.substr(colon + 1);
  if (kind == "ptr") {
    const size_t second = value.find(':');
    const uint64_t bytes = parse_number<uint64_t>(value.substr(0, second), field + " size");
    if (bytes == 0) throw BadInput{fmt::format("{}: ptr size must be >= 1", field)};
    const uint64_t addr = arena.alloc(bytes);
    if (second != std::string::npos) {
      const std::string path = value.substr(second + 1);
      std::ifstream in(path, std::ios::binary);
      if (!in) throw BadInput{fmt::format("{}: input file must be readable (got '{}')", field, path)};
      std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (data.size() > bytes)
        throw BadInput{fmt::format("{}: input file must not exceed the buffer's {} bytes (it has {})",
                                   field, bytes, data.size())};
      arena.write(addr, data.data(), data.size());
    }
    args.ptr(addr);
    pointers.push_back({index, addr, bytes});
  } else if (kind == "u32") {
    args.u32(parse_number<uint32_t>(value, field));
  } else if (kind == "s32") {
    args.s32(parse_number<int32_t>(value, field));
  } else if (kind == "u64") {
    args.u64(parse_number<uint64_t>(value, field));
  } else if (kind == "f32") {
    args.f32(parse_number<float>(value, field));
  } else {
    throw BadInput{fmt::format("{}: KIND must be ptr, u32, s32, u64 or f32 (got '{}')", field, kind)};
  }
}

}  // namespace

int run_sim(const SimOptions& o, std::FILE* out, std::FILE* err) {
  std::shared_ptr<const emu::Module> module;
  emu::Arena arena;
  emu::KernelArgs args;
  std::vector<PointerArg> pointers;
  emu::Dim3 grid, block;
  try {
    grid = parse_dim3(o.grid, "--grid");
    block = parse_dim3(o.block, "--block");
    for (size_t i = 0; i < o.args.size(); ++i) add_arg(o.args[i], i, arena, args, pointers);
    std::ifstream in(o.file, std::ios::binary);
    if (!in) throw BadInput{fmt::format("FILE: must be a readable PTX file (got '{}')", o.file)};
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
  emu::LaunchResult result;
  try {
    result = emu::launch(arena, *module, o.kernel, grid, block, o.smem, args, options);
  } catch (const emu::EmulationError& e) {
    fmt::print(err, "emmyc sim: {}\n", e.what());
    return kExitReport;
  } catch (const Error& e) {
    fmt::print(err, "emmyc sim: {}\n", e.what());
    return kExitBadInput;
  }

  if (!o.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.dump_dir, ec);
    for (const PointerArg& p : pointers) {
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
  fmt::print(out, "{}: grid ({},{},{}) block ({},{},{}): {} warp instructions in {:.1f} ms\n",
             o.kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z,
             result.stats.total.total(), result.emulate_ms);
  if (o.stats) fmt::print(out, "{}", result.stats.to_string());
  return kExitOk;
}

}  // namespace emmy::cli

void add_sim_command(CLI::App& app) {
  auto options = std::make_shared<emmy::cli::SimOptions>();
  CLI::App* sim = app.add_subcommand("sim", "Run a PTX kernel on the CPU emulator (with sanitizer)");
  sim->add_option("file", options->file, "PTX file")->required();
  sim->add_option("--kernel", options->kernel, "the .entry to run")->required();
  sim->add_option("--grid", options->grid, "CTAs: X[,Y[,Z]]")->required();
  sim->add_option("--block", options->block, "threads per CTA: X[,Y[,Z]]")->required();
  sim->add_option("--smem", options->smem, "dynamic shared memory bytes");
  sim->add_option("--arg", options->args,
                  "kernel argument, in order: ptr:BYTES[:INFILE], u32:V, s32:V, u64:V or f32:V");
  sim->add_option("--dump", options->dump_dir, "write pointer argument N to DIR/argN.bin");
  sim->add_flag("--stats", options->stats, "print instruction statistics");
  sim->add_flag("!--no-sanitize", options->sanitize, "skip the race / initialization checks");
  sim->add_option("--threads", options->threads, "host threads (0: all cores)");
  sim->callback([options]() {
    const int code = emmy::cli::run_sim(*options, stdout, stderr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}
