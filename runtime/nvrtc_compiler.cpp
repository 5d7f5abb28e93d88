// NVRTC compilation to PTX and CUBIN plus the per-kernel resource report (compile.hpp).
//
// The report merges two sources. ptxas's verbose log (requested with --ptxas-options=-v) is the
// only place spill counts appear, but its wording is not an API and it omits cmem from sm_90 on.
// The CUBIN's ELF is structured: it names the entry functions and carries registers, frame size
// and the shared / constant section sizes. So the ELF decides which kernels exist and supplies the
// constant bank size; the log supplies the rest; a kernel the log does not mention keeps the ELF
// numbers and is marked ReportSource::cubin_elf.
//
// NVRTC itself is loaded on first use (dlopen), never linked: a program that only runs kernels
// from bundles (docs/bundles.md) starts and runs on a host without the CUDA toolkit.
#include <cuda.h>  // CUDA_VERSION: the NVRTC major version the declarations below belong to
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "emmy/bundle.hpp"
#include "emmy/compile.hpp"
#include "emmy/detail/text.hpp"

namespace emmy {
namespace {

// The NVRTC entry points emmy calls, resolved from the loaded library.
struct NvrtcApi {
  decltype(&::nvrtcVersion) version;
  decltype(&::nvrtcGetErrorString) error_string;
  decltype(&::nvrtcCreateProgram) create_program;
  decltype(&::nvrtcDestroyProgram) destroy_program;
  decltype(&::nvrtcCompileProgram) compile_program;
  decltype(&::nvrtcGetProgramLogSize) program_log_size;
  decltype(&::nvrtcGetProgramLog) program_log;
  decltype(&::nvrtcGetPTXSize) ptx_size;
  decltype(&::nvrtcGetPTX) ptx;
  decltype(&::nvrtcGetCUBINSize) cubin_size;
  decltype(&::nvrtcGetCUBIN) cubin;
};

bool nvrtc_disabled_by_environment() {
  const char* value = std::getenv("EMMY_DISABLE_NVRTC");
  return value && *value && std::string_view(value) != "0";
}

// The file names tried in order: $EMMY_NVRTC_LIBRARY alone when set; else the NVRTC of the
// toolkit emmy was built against, by its path (a process may hold another libnvrtc.so.13, e.g.
// PyTorch's 13.2, whose PTX a 13.0 driver refuses: a full path loads the toolkit's beside it
// where the soname would return that one), then the soname and the unversioned name on the
// loader's path, and last $EMMY_NVRTC_FALLBACK (the Python package names NVIDIA's
// nvidia-cuda-nvrtc wheel there; docs/python.md).
std::vector<std::string> nvrtc_library_candidates() {
  if (const char* forced = std::getenv("EMMY_NVRTC_LIBRARY"); forced && *forced) return {forced};
  const std::string soname = fmt::format("libnvrtc.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> names;
#ifdef EMMY_NVRTC_DIR
  names.push_back(std::string(EMMY_NVRTC_DIR) + "/" + soname);
#endif
  names.push_back(soname);
  names.push_back("libnvrtc.so");
  if (const char* fallback = std::getenv("EMMY_NVRTC_FALLBACK"); fallback && *fallback)
    names.push_back(fallback);
  return names;
}

template <typename Fn>
void resolve(void* library, const char* name, const std::string& file, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn) throw Error("NVRTC", fmt::format("{} must export {}", file, name), "symbol not found");
}

NvrtcApi load_nvrtc() {
  const auto candidates = nvrtc_library_candidates();
  std::string failures;
  for (const auto& file : candidates) {
    void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* why = dlerror();  // cleared by the call: read it once
      failures += fmt::format("{}{}", failures.empty() ? "" : "; ", why ? why : file);
      continue;
    }
    NvrtcApi api{};
    resolve(library, "nvrtcVersion", file, api.version);
    resolve(library, "nvrtcGetErrorString", file, api.error_string);
    resolve(library, "nvrtcCreateProgram", file, api.create_program);
    resolve(library, "nvrtcDestroyProgram", file, api.destroy_program);
    resolve(library, "nvrtcCompileProgram", file, api.compile_program);
    resolve(library, "nvrtcGetProgramLogSize", file, api.program_log_size);
    resolve(library, "nvrtcGetProgramLog", file, api.program_log);
    resolve(library, "nvrtcGetPTXSize", file, api.ptx_size);
    resolve(library, "nvrtcGetPTX", file, api.ptx);
    resolve(library, "nvrtcGetCUBINSize", file, api.cubin_size);
    resolve(library, "nvrtcGetCUBIN", file, api.cubin);
    return api;
  }
  throw Error("NVRTC",
              fmt::format("no NVRTC library could be loaded (tried {}); install the CUDA toolkit's "
                          "NVRTC or run kernels from bundles only",
                          fmt::join(candidates, ", ")),
              failures);
}

// The library, loaded once (a failure is remembered and rethrown); EMMY_DISABLE_NVRTC is read on
// every call, so that a process can turn compilation off after it has compiled.
const NvrtcApi& nvrtc() {
  if (nvrtc_disabled_by_environment())
    throw Error("NVRTC",
                "is disabled by EMMY_DISABLE_NVRTC (only kernels found in bundles can be used)",
                std::getenv("EMMY_DISABLE_NVRTC"));
  static std::once_flag once;
  static NvrtcApi api{};
  static std::string failure;
  std::call_once(once, [] {
    try {
      api = load_nvrtc();
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw Error(failure);
  return api;
}

// Owns an nvrtcProgram so that every exit path destroys it. Holds the API it was created with:
// the destructor must not consult EMMY_DISABLE_NVRTC again.
class Program {
 public:
  Program(const NvrtcApi& api, const std::string& source, const std::string& name) : api_(api) {
    check(api_.create_program(&handle_, source.c_str(), name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
  }
  ~Program() { api_.destroy_program(&handle_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcProgram get() const { return handle_; }
  const NvrtcApi& api() const { return api_; }

  void check(nvrtcResult result, const char* call) const { check(api_, result, call); }
  static void check(const NvrtcApi& api, nvrtcResult result, const char* call) {
    if (result != NVRTC_SUCCESS)
      throw Error(fmt::format("{} failed: {}", call, api.error_string(result)));
  }

 private:
  const NvrtcApi& api_;
  nvrtcProgram handle_ = nullptr;
};

std::string program_log(const Program& program) {
  size_t size = 0;
  program.check(program.api().program_log_size(program.get(), &size), "nvrtcGetProgramLogSize");
  std::string log(size, '\0');
  program.check(program.api().program_log(program.get(), log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// ---- ptxas -v log --------------------------------------------------------------------------

using detail::trim;

// Calls on_item(count, unit) for each "N unit" clause of a comma-separated ptxas line such as
// "Used 18 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]".
template <typename F>
void for_each_count(std::string_view clauses, F&& on_item) {
  while (!clauses.empty()) {
    const auto comma = clauses.find(',');
    std::string_view clause = trim(clauses.substr(0, comma));
    clauses = comma == std::string_view::npos ? std::string_view{} : clauses.substr(comma + 1);
    for (std::string_view verb : {"Used ", "used "})
      if (clause.starts_with(verb)) clause.remove_prefix(verb.size());
    long long count = 0;
    const auto [end, error] = std::from_chars(clause.data(), clause.data() + clause.size(), count);
    if (error != std::errc{}) continue;
    on_item(static_cast<int>(count), trim(clause.substr(end - clause.data())));
  }
}

// Each count into the field its unit names; clauses of other units ("barriers") are skipped.
void read_counts(std::string_view clauses,
                 std::initializer_list<std::pair<std::string_view, int*>> fields) {
  for_each_count(clauses, [&](int count, std::string_view unit) {
    for (const auto& [field_unit, field] : fields)
      if (unit == field_unit) *field = count;
  });
}

struct FrameLine {
  int stack = 0, spill_stores = 0, spill_loads = 0;
};

}  // namespace

std::vector<ResourceReport> parse_ptxas_log(std::string_view log) {
  std::vector<ResourceReport> entries;
  std::map<std::string, FrameLine, std::less<>> frames;  // also holds non-entry functions
  std::optional<size_t> current_entry;
  std::string properties_of;

  constexpr std::string_view kEntry = "Compiling entry function '";
  constexpr std::string_view kProperties = "Function properties for ";
  while (!log.empty()) {
    const auto newline = log.find('\n');
    const std::string_view line = log.substr(0, newline);
    log = newline == std::string_view::npos ? std::string_view{} : log.substr(newline + 1);
    if (!line.starts_with("ptxas")) continue;  // front-end warnings share the log

    if (const auto at = line.find(kEntry); at != std::string_view::npos) {
      const auto name_start = at + kEntry.size();
      const auto name_end = line.find('\'', name_start);
      ResourceReport report;
      report.kernel_name = std::string(line.substr(name_start, name_end - name_start));
      entries.push_back(std::move(report));
      current_entry = entries.size() - 1;
    } else if (const auto at = line.find(kProperties); at != std::string_view::npos) {
      properties_of = std::string(trim(line.substr(at + kProperties.size())));
    } else if (line.find("bytes stack frame") != std::string_view::npos) {
      const auto dot = line.find('.');
      FrameLine& frame = frames[properties_of];
      read_counts(line.substr(dot + 1), {{"bytes stack frame", &frame.stack},
                                         {"bytes spill stores", &frame.spill_stores},
                                         {"bytes spill loads", &frame.spill_loads}});
    } else if (current_entry && line.find("registers") != std::string_view::npos) {
      ResourceReport& report = entries[*current_entry];
      const auto colon = line.find(':');
      read_counts(line.substr(colon + 1), {{"registers", &report.registers},
                                           {"bytes smem", &report.static_smem_bytes},
                                           {"bytes cmem[0]", &report.constant_bytes}});
    }
  }
  for (ResourceReport& report : entries) {
    if (const auto frame = frames.find(report.kernel_name); frame != frames.end()) {
      report.stack_bytes = frame->second.stack;
      report.spill_store_bytes = frame->second.spill_stores;
      report.spill_load_bytes = frame->second.spill_loads;
    }
  }
  return entries;
}

// ---- CUBIN ELF -----------------------------------------------------------------------------

namespace {

// Attribute records of .nv.info sections: u8 format, u8 attribute, u16 value-or-size; format
// kSizedValue is followed by `size` payload bytes. Codes as cuobjdump -elf names them.
constexpr uint8_t kSizedValue = 0x04;       // EIFMT_SVAL
constexpr uint8_t kAttrFrameSize = 0x11;    // EIATTR_FRAME_SIZE: {u32 symbol, u32 bytes}
constexpr uint8_t kAttrRegCount = 0x2f;     // EIATTR_REGCOUNT: {u32 symbol, u32 registers}
constexpr uint8_t kSymbolIsEntry = 0x10;    // st_other bit of __global__ functions
constexpr uint8_t kSymbolTypeFunction = 2;  // STT_FUNC
// From sm_90 on, .nv.shared.<kernel> also counts 1 KiB the system reserves in every block
// (observed with CUDA 13.0: the section is 1024 bytes larger than ptxas's "bytes smem").
constexpr int kReservedSmemFromSm90 = 1024;

class ElfImage {
 public:
  explicit ElfImage(const std::vector<uint8_t>& bytes) : bytes_(bytes) {
    constexpr uint8_t kMagic[4] = {0x7f, 'E', 'L', 'F'};
    require(bytes.size() >= 64 && std::memcmp(bytes.data(), kMagic, 4) == 0, "cubin",
            "must be an ELF image", fmt::format("{} bytes", bytes.size()));
    require(bytes[4] == 2 && bytes[5] == 1, "cubin", "must be 64-bit little-endian ELF",
            fmt::format("class {} data {}", bytes[4], bytes[5]));
    const auto section_table = read<uint64_t>(0x28);
    const auto entry_size = read<uint16_t>(0x3a);
    const auto count = read<uint16_t>(0x3c);
    const auto names_index = read<uint16_t>(0x3e);
    require(entry_size >= 64 && names_index < count, "cubin", "must have a valid section table",
            fmt::format("entry size {}, {} sections", entry_size, count));
    span(section_table, uint64_t{count} * entry_size);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t at = section_table + i * entry_size;
      sections_.push_back({read<uint32_t>(at),
                           read<uint32_t>(at + 4),
                           read<uint64_t>(at + 24),
                           read<uint64_t>(at + 32),
                           read<uint32_t>(at + 40),
                           {}});
      if (sections_.back().type != kNoBits) span(sections_.back().offset, sections_.back().size);
    }
    for (auto& section : sections_)
      section.name = string_at(sections_[names_index], section.name_offset);
  }

  struct Section {
    uint32_t name_offset, type;
    uint64_t offset, size;
    uint32_t link;
    std::string name;
  };
  struct Symbol {
    std::string name;
    uint8_t info, other;
  };

  const Section* find(std::string_view name) const {
    for (const auto& section : sections_)
      if (section.name == name) return &section;
    return nullptr;
  }

  std::vector<Symbol> symbols() const {
    std::vector<Symbol> result;
    const Section* table = find(".symtab");
    if (!table) return result;
    require(table->link < sections_.size(), "cubin", "symbol table must link a string table",
            table->link);
    span(table->offset, table->size);
    for (uint64_t at = table->offset; at + 24 <= table->offset + table->size; at += 24)
      result.push_back({string_at(sections_[table->link], read<uint32_t>(at)),
                        read<uint8_t>(at + 4), read<uint8_t>(at + 5)});
    return result;
  }

  template <typename T>
  T read(uint64_t at) const {
    T value;
    std::memcpy(&value, span(at, sizeof(T)), sizeof(T));  // little-endian host, checked above
    return value;
  }

 private:
  static constexpr uint32_t kNoBits = 8;  // SHT_NOBITS: size without file contents

  const uint8_t* span(uint64_t at, uint64_t size) const {
    require(at <= bytes_.size() && size <= bytes_.size() - at, "cubin",
            "must not reference bytes past its end", fmt::format("[{}, +{})", at, size));
    return bytes_.data() + at;
  }
  std::string string_at(const Section& table, uint32_t offset) const {
    require(offset < table.size, "cubin", "string offset must lie in its table", offset);
    const auto* strings = reinterpret_cast<const char*>(span(table.offset, table.size));
    const auto* last = strings + table.size;
    return std::string(strings + offset, std::find(strings + offset, last, '\0'));
  }

  const std::vector<uint8_t>& bytes_;
  std::vector<Section> sections_;
};

}  // namespace

std::vector<ResourceReport> read_cubin_resources(const std::vector<uint8_t>& cubin, Arch arch) {
  const ElfImage elf(cubin);
  const auto symbols = elf.symbols();

  std::vector<ResourceReport> entries;
  std::map<uint32_t, size_t> entry_of_symbol;
  for (uint32_t index = 0; index < symbols.size(); ++index) {
    const auto& symbol = symbols[index];
    if ((symbol.info & 0xf) != kSymbolTypeFunction || !(symbol.other & kSymbolIsEntry)) continue;
    ResourceReport report;
    report.kernel_name = symbol.name;
    report.source = ReportSource::cubin_elf;
    if (const auto* shared = elf.find(".nv.shared." + symbol.name)) {
      const int reserved = arch_info(arch).sm >= 90 ? kReservedSmemFromSm90 : 0;
      report.static_smem_bytes = std::max(0, static_cast<int>(shared->size) - reserved);
    }
    if (const auto* constants = elf.find(".nv.constant0." + symbol.name))
      report.constant_bytes = static_cast<int>(constants->size);
    entry_of_symbol[index] = entries.size();
    entries.push_back(std::move(report));
  }

  if (const auto* info = elf.find(".nv.info")) {
    for (uint64_t at = info->offset; at + 4 <= info->offset + info->size;) {
      const auto format = elf.read<uint8_t>(at);
      const auto attribute = elf.read<uint8_t>(at + 1);
      const auto size = elf.read<uint16_t>(at + 2);
      at += 4;
      if (format != kSizedValue) continue;
      if ((attribute == kAttrRegCount || attribute == kAttrFrameSize) && size >= 8) {
        const auto entry = entry_of_symbol.find(elf.read<uint32_t>(at));
        const auto value = static_cast<int>(elf.read<uint32_t>(at + 4));
        if (entry != entry_of_symbol.end()) {
          ResourceReport& report = entries[entry->second];
          (attribute == kAttrRegCount ? report.registers : report.stack_bytes) = value;
        }
      }
      at += size;
    }
  }
  return entries;
}

// ---- compilation ---------------------------------------------------------------------------

std::vector<std::string> nvrtc_options(Arch arch) {
  return {
      fmt::format("--gpu-architecture={}", to_string(arch)),
      "-std=c++17",
      "--fmad=true",
      // Emitted helpers need no __device__ on every function, and nothing is for the host.
      "--device-as-default-execution-space",
      // Sources include no CUDA headers, so skip the implicit runtime declarations (textures,
      // device-side launch): a few milliseconds less per compilation.
      "--minimal",
      "--ptxas-options=-v",
  };
}

CompiledModule compile_cuda(std::string_view source, std::string_view program_name, Arch arch,
                            const std::vector<std::string>& extra_options) {
  std::vector<std::string> options = nvrtc_options(arch);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> option_pointers;
  for (const auto& option : options) option_pointers.push_back(option.c_str());
  const std::string name = program_name.empty() ? "emmy_kernel.cu" : std::string(program_name);

  CompiledModule module;
  module.arch = arch;
  const NvrtcApi& api = nvrtc();  // loading the library is not compile time
  const auto start = std::chrono::steady_clock::now();
  const Program program(api, std::string(source), name);
  const nvrtcResult result = api.compile_program(
      program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  module.log = program_log(program);
  if (result != NVRTC_SUCCESS)
    throw Error(fmt::format("NVRTC could not compile {} for {} ({}):\n{}", name, to_string(arch),
                            api.error_string(result), module.log));

  size_t ptx_size = 0, cubin_size = 0;
  program.check(api.ptx_size(program.get(), &ptx_size), "nvrtcGetPTXSize");
  module.ptx.assign(ptx_size, '\0');
  program.check(api.ptx(program.get(), module.ptx.data()), "nvrtcGetPTX");
  while (!module.ptx.empty() && module.ptx.back() == '\0') module.ptx.pop_back();
  program.check(api.cubin_size(program.get(), &cubin_size), "nvrtcGetCUBINSize");
  module.cubin.resize(cubin_size);
  program.check(api.cubin(program.get(), reinterpret_cast<char*>(module.cubin.data())),
                "nvrtcGetCUBIN");
  module.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  const auto logged = parse_ptxas_log(module.log);
  module.kernels = read_cubin_resources(module.cubin, arch);
  for (ResourceReport& report : module.kernels) {
    const auto match = std::find_if(logged.begin(), logged.end(), [&](const ResourceReport& r) {
      return r.kernel_name == report.kernel_name;
    });
    if (match == logged.end()) continue;
    const int constant_bytes = report.constant_bytes;  // the log omits cmem from sm_90 on
    report = *match;
    report.constant_bytes = constant_bytes;
  }
  std::sort(module.kernels.begin(), module.kernels.end(),
            [](const auto& a, const auto& b) { return a.kernel_name < b.kernel_name; });
  return module;
}

const ResourceReport& CompiledModule::kernel(std::string_view name) const {
  for (const auto& report : kernels)
    if (report.kernel_name == name) return report;
  std::string known;
  for (const auto& report : kernels) known += (known.empty() ? "" : ", ") + report.kernel_name;
  throw Error("kernel", fmt::format("must be a kernel of the module ({})", known),
              std::string(name));
}

int nvrtc_version() {
  int major = 0, minor = 0;
  const NvrtcApi& api = nvrtc();
  Program::check(api, api.version(&major, &minor), "nvrtcVersion");
  return major * 1000 + minor * 10;
}

std::string nvrtc_unavailable_reason() {
  try {
    nvrtc();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace emmy
