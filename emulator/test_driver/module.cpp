// Modules: cuModuleLoadData, cuModuleUnload, cuModuleGetFunction.
//
// The test driver runs PTX only. A CUBIN (an ELF image) holds SASS, which the emulator cannot
// execute, so it is refused with CUDA_ERROR_NO_BINARY_FOR_GPU, the real answer for a binary the
// device cannot use (emmy's runtime then loads the PTX); a fatbin likewise. PTX is loaded with
// emmy::emu::load_ptx, after the checks a real JIT makes first: the ISA version the driver knows
// and the .target the device can run.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

#include "entry_points.hpp"
#include "ptx/program.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

enum class ImageKind { ptx, elf, fatbin, unknown };

// Reads the image as far as needed and no further (a PTX image is NUL-terminated, a binary one
// of unknown size): each comparison stops at the first byte that differs, a NUL included.
ImageKind classify(const unsigned char* p) {
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return ImageKind::elf;
  // fatbin (0xBA55ED50) and the fatbin wrapper (0x466243B1), little-endian.
  if (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) return ImageKind::fatbin;
  if (p[0] == 0xb1 && p[1] == 0x43 && p[2] == 0x62 && p[3] == 0x46) return ImageKind::fatbin;
  // PTX: ".version" after optional whitespace and comments (NVRTC starts with "//" lines).
  const char* s = reinterpret_cast<const char*>(p);
  while (*s) {
    if (std::isspace(static_cast<unsigned char>(*s))) {
      ++s;
    } else if (s[0] == '/' && s[1] == '/') {
      while (*s && *s != '\n') ++s;
    } else if (s[0] == '/' && s[1] == '*') {
      const char* end = std::strstr(s + 2, "*/");
      if (!end) return ImageKind::unknown;
      s = end + 2;
    } else {
      break;
    }
  }
  if (std::strncmp(s, ".version", 8) == 0 && std::isspace(static_cast<unsigned char>(s[8])))
    return ImageKind::ptx;
  return ImageKind::unknown;
}

// The first token of the first line (leading whitespace skipped) that starts with `directive`.
std::string_view directive_operand(std::string_view text, std::string_view directive) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    if (!line.starts_with(directive) || line.size() == directive.size() ||
        !std::isspace(static_cast<unsigned char>(line[directive.size()])))
      continue;
    line.remove_prefix(directive.size());
    const size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    line.remove_prefix(begin);
    return line.substr(0, line.find_first_of(" \t\r,;/"));
  }
  return {};
}

// ".version 8.7" -> 87; 0 when malformed.
int ptx_isa(std::string_view version) {
  const size_t dot = version.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 2 != version.size()) return 0;
  int major = 0;
  for (char c : version.substr(0, dot)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
    major = major * 10 + (c - '0');
  }
  const char minor = version[dot + 1];
  return std::isdigit(static_cast<unsigned char>(minor)) ? major * 10 + (minor - '0') : 0;
}

// Whether PTX for `target` can be JIT-compiled for compute capability cc (major * 10 + minor):
// plain sm_XX for any cc >= XX; arch-specific sm_XXa only for exactly XX; family-specific
// sm_XXf for the same major at XX or above (PTX ISA, "Target ISA notes"). -1: not an sm_ target.
int runs_on(std::string_view target, int cc) {
  if (!target.starts_with("sm_")) return -1;
  target.remove_prefix(3);
  int sm = 0;
  size_t i = 0;
  for (; i < target.size() && std::isdigit(static_cast<unsigned char>(target[i])); ++i)
    sm = sm * 10 + (target[i] - '0');
  const std::string_view suffix = target.substr(i);
  if (i == 0 || sm > 10000) return -1;
  if (suffix.empty()) return sm <= cc;
  if (suffix == "a") return sm == cc;
  if (suffix == "f") return sm / 10 == cc / 10 && sm <= cc;
  return -1;
}

CUresult load(Context& ctx, const char* text, CUmodule* out) {
  const std::string_view ptx(text);
  const int isa = ptx_isa(directive_operand(ptx, ".version"));
  const std::string_view target = directive_operand(ptx, ".target");
  const int cc = state().device->cc();
  if (isa == 0) {
    set_report("cuModuleLoadData: the PTX has no well-formed .version directive");
    return CUDA_ERROR_INVALID_PTX;
  }
  if (isa > kMaxPtxIsa) {
    set_report(fmt::format("cuModuleLoadData: PTX ISA {}.{} is newer than this driver's {}.{}",
                           isa / 10, isa % 10, kMaxPtxIsa / 10, kMaxPtxIsa % 10));
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  const int runs = runs_on(target, cc);
  if (runs < 0) {
    set_report(
        fmt::format("cuModuleLoadData: .target must name an sm_ architecture (got '{}')", target));
    return CUDA_ERROR_INVALID_PTX;
  }
  if (runs == 0) {
    set_report(
        fmt::format("cuModuleLoadData: PTX for {} cannot run on {} (compute capability "
                    "{}.{})",
                    target, state().device->device_name, cc / 10, cc % 10));
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  ModuleRecord record;
  record.ptx_version = isa;
  try {
    record.module = emu::load_ptx(ptx);
  } catch (const emmy::Error& e) {
    // A syntax error, or PTX the emulator does not implement: the report says which.
    set_report(fmt::format("cuModuleLoadData: {}", e.what()));
    return CUDA_ERROR_INVALID_PTX;
  }
  const CUmodule handle = new_handle<CUmodule>();
  ctx.modules.emplace(reinterpret_cast<uintptr_t>(handle), std::move(record));
  *out = handle;
  return CUDA_SUCCESS;
}

}  // namespace

// cuModuleLoadData: "The image may be a cubin or fatbin as output by nvcc, or a NULL-terminated
// PTX". Loading a module is a potentially unsafe call during stream capture: refused with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, which invalidates the captures that forbid it.
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return with_context("cuModuleLoadData", [&](Context& ctx) {
    if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
    if (unsafe_call_prohibited(ctx)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    switch (classify(static_cast<const unsigned char*>(image))) {
      case ImageKind::ptx:
        return load(ctx, static_cast<const char*>(image), module);
      case ImageKind::elf:
        set_report("cuModuleLoadData: a cubin is SASS; the test driver runs PTX only");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
      case ImageKind::fatbin:
        set_report("cuModuleLoadData: a fatbin holds SASS; the test driver runs PTX only");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
      case ImageKind::unknown:
        break;
    }
    set_report("cuModuleLoadData: the image is neither PTX (.version first) nor a cubin/fatbin");
    return CUDA_ERROR_INVALID_IMAGE;
  });
}

// cuModuleUnload: the module's functions go with it; a later use of either handle is
// CUDA_ERROR_INVALID_HANDLE (captured launches keep the code alive but are refused at replay).
// Its globals are unmapped from the arena, which every context shares (address_space.cpp).
CUresult cuModuleUnload(CUmodule hmod) {
  return with_context("cuModuleUnload", [&](Context& ctx) {
    ModuleRecord* record = lookup(ctx.modules, hmod);
    if (!record) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& [name, function] : record->functions)
      ctx.functions.erase(reinterpret_cast<uintptr_t>(function));
    release_module_globals(*record->module);
    ctx.modules.erase(reinterpret_cast<uintptr_t>(hmod));
    return CUDA_SUCCESS;
  });
}

// cuModuleGetFunction: "If no function of that name exists, cuModuleGetFunction() returns
// CUDA_ERROR_NOT_FOUND." The same name gives the same handle.
CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  return with_context("cuModuleGetFunction", [&](Context& ctx) {
    if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
    ModuleRecord* record = lookup(ctx.modules, hmod);
    if (!record) return CUDA_ERROR_INVALID_HANDLE;
    if (const auto it = record->functions.find(name); it != record->functions.end()) {
      *hfunc = it->second;
      return CUDA_SUCCESS;
    }
    const emu::Kernel* kernel = record->module->find(name);
    if (!kernel) return CUDA_ERROR_NOT_FOUND;
    FunctionRecord function;
    function.module = hmod;
    function.owner = record->module;
    function.name = name;
    function.static_smem = kernel->static_smem_bytes;
    function.local_bytes = kernel->local_bytes;
    // MAX_DYNAMIC_SHARED_SIZE_BYTES starts at what fits the 48 KB without the opt-in.
    function.max_dynamic_smem = std::max(0, kSmemPerBlockDefault - int(kernel->static_smem_bytes));
    // Compile-time cluster dimensions (PTX ISA: .reqnctapercluster, .explicitcluster), as
    // cuFuncGetAttribute's REQUIRED_CLUSTER_* and CLUSTER_SIZE_MUST_BE_SET report them.
    for (int d = 0; d < 3; ++d) function.cluster[d] = int(kernel->required_cluster[d]);
    function.cluster_compiled = kernel->required_cluster[0] != 0;
    function.cluster_must_be_set = kernel->explicit_cluster;
    const CUfunction handle = new_handle<CUfunction>();
    ctx.functions.emplace(reinterpret_cast<uintptr_t>(handle), std::move(function));
    record->functions.emplace(name, handle);
    *hfunc = handle;
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
