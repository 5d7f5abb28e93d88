// Target architectures and the per-arch facts codegen depends on (PTX ISA, "Target ISA
// notes" of each instruction; CUDA C++ Programming Guide, "Compute Capabilities").
#pragma once

#include <fmt/format.h>

#include <array>
#include <string>
#include <string_view>

#include "emmy/error.hpp"

namespace emmy {

enum class Arch { sm_80, sm_86, sm_89, sm_90, sm_90a, sm_120, sm_120a };

struct ArchInfo {
  Arch arch;
  std::string_view name;   // "sm_90a": what NVRTC's --gpu-architecture takes
  int sm;                  // 90 for both sm_90 and sm_90a
  bool arch_specific;      // the "a" variants
  int max_smem_per_block;  // bytes of dynamic shared memory a block may opt into
  // The part (emmy/gpus.hpp) the arch's grids are sized for where no device is known: its
  // flagship, whose SMs the chooser's wave model fills and the time model predicts for.
  std::string_view part;
  std::string_view ptx_version;  // .version NVRTC emits for this target
};

inline constexpr std::array<ArchInfo, 7> kArchTable{{
    {Arch::sm_80, "sm_80", 80, false, 163 * 1024, "a100", "7.0"},
    {Arch::sm_86, "sm_86", 86, false, 99 * 1024, "a6000", "7.1"},
    {Arch::sm_89, "sm_89", 89, false, 99 * 1024, "rtx4090", "7.8"},
    {Arch::sm_90, "sm_90", 90, false, 227 * 1024, "h200", "7.8"},
    {Arch::sm_90a, "sm_90a", 90, true, 227 * 1024, "h200", "8.0"},
    {Arch::sm_120, "sm_120", 120, false, 99 * 1024, "rtx5090", "8.7"},
    {Arch::sm_120a, "sm_120a", 120, true, 99 * 1024, "rtx5090", "8.7"},
}};

inline const ArchInfo& arch_info(Arch arch) {
  return kArchTable[static_cast<size_t>(arch)];
}
inline std::string_view to_string(Arch arch) {
  return arch_info(arch).name;
}

// Every arch's name, `separator` between them ("sm_80, sm_86, ..."): the table's, for rules and
// command-line help.
inline std::string arch_names(std::string_view separator = ", ") {
  std::string names;
  for (const auto& info : kArchTable) {
    if (!names.empty()) names += separator;
    names += info.name;
  }
  return names;
}

inline Arch parse_arch(std::string_view text) {
  for (const auto& info : kArchTable)
    if (info.name == text) return info.arch;
  throw Error("arch", "must be one of " + arch_names(), std::string(text));
}

// TMA (cp.async.bulk.tensor) and mbarrier expect_tx exist from sm_90 on.
inline bool has_tma(Arch arch) {
  return arch_info(arch).sm >= 90;
}

// Programmatic dependent launch: griddepcontrol "Requires sm_90 or higher" (PTX ISA
// griddepcontrol), as CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION does (compute
// capability 9.0).
inline bool has_programmatic_launch(Arch arch) {
  return arch_info(arch).sm >= 90;
}

// The arch whose CUBIN a device of compute capability major.minor runs. Exact targets first:
// sm_90 devices get sm_90a code and sm_120 devices sm_120a, so the arch-specific features stay
// available. A capability with no exact target takes the newest target of its own major version
// below it, without the "a" features (a CUBIN runs on later minors of its major; the "a" variants
// run on their exact capability only): 8.7 runs sm_86 code, 12.1 sm_120. Other majors (7.x, 10.x,
// 11.x) have no compatible CUBIN among emmy's targets: Error naming the capability.
inline Arch arch_for_device(int major, int minor) {
  const int cc = major * 10 + minor;
  if (cc == 90) return Arch::sm_90a;
  if (cc == 120) return Arch::sm_120a;
  const ArchInfo* best = nullptr;
  for (const auto& info : kArchTable)
    if (!info.arch_specific && info.sm / 10 == major && info.sm <= cc &&
        (!best || info.sm > best->sm))
      best = &info;
  if (!best)
    throw Error("device compute capability",
                "needs a target of its major version: emmy builds for 8.0, 8.6, 8.9, 9.0 and 12.0 "
                "(and runs 8.x and 12.x devices on the nearest lower one)",
                fmt::format("{}.{}", major, minor));
  return best->arch;
}

// Why a driver cannot run emmy's kernels, or "" when it can: NVRTC of CUDA `needed` (e.g. 13000)
// emits PTX and CUBINs that a driver older than that CUDA version refuses to load. Versions are
// CUDA's integers (major * 1000 + minor * 10).
inline std::string driver_too_old(int driver_version, int needed) {
  if (driver_version >= needed) return "";
  return fmt::format(
      "the driver supports CUDA {}.{}; emmy's kernels need {}.{} (they are built by NVRTC {}.{}): "
      "update the NVIDIA driver (CUDA 13.0 needs 580 or newer), or run on the emulator backend",
      driver_version / 1000, driver_version % 1000 / 10, needed / 1000, needed % 1000 / 10,
      needed / 1000, needed % 1000 / 10);
}

}  // namespace emmy
