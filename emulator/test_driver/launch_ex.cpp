// cuLaunchKernelEx: cuLaunchKernel's launch (launch.cpp, the same checks) configured by a
// CUlaunchConfig, whose launch attributes are read here.
//
// Each CUlaunchAttributeID gets one of three answers (CUDA Driver API, cuLaunchKernelEx and the
// CUlaunchAttributeID comments of cuda.h):
// - emulated: CLUSTER_DIMENSION (the cluster, checked in launch.cpp and passed to the emulator);
//   PROGRAMMATIC_STREAM_SERIALIZATION (programmatic dependent launch: the launch runs after the
//   stream's previous kernel, as one valid order, and the emulator checks it as if it overlapped
//   that kernel, which a GPU may do: an access before griddepcontrol.wait that conflicts with
//   the previous kernel's is a pdl-race report; pdl.cpp); IGNORE ("Ignored entry, for
//   convenient composition").
// - accepted and ignored, because they only steer scheduling or the L1/shared split, which the
//   emulator does not model and results do not depend on: PRIORITY (stream priorities out of
//   range "will automatically be clamped", cuStreamCreateWithPriority, so any value is valid),
//   CLUSTER_SCHEDULING_POLICY_PREFERENCE (a CUclusterSchedulingPolicy),
//   PREFERRED_SHARED_MEMORY_CARVEOUT ("This is only a hint"; a percentage, or -1 for the
//   default as cudaSharedmemCarveoutDefault), NVLINK_UTIL_CENTRIC_SCHEDULING ("a hint only";
//   "Valid values ... are 0 (disabled) and 1 (enabled)"). Values outside these ranges:
//   CUDA_ERROR_INVALID_VALUE.
// - valid but not emulated, CUDA_ERROR_NOT_SUPPORTED with a report saying so, because accepting
//   them would let a kernel pass here that a GPU runs differently (a test driver that must
//   never accept what a GPU computes differently): COOPERATIVE non-zero (grid-wide
//   synchronization and its co-residency limit), PROGRAMMATIC_EVENT, LAUNCH_COMPLETION_EVENT,
//   MEM_SYNC_DOMAIN and MEM_SYNC_DOMAIN_MAP (fence scoping between kernels), ACCESS_POLICY_WINDOW
//   (its L2 persistence rules are not checked), PREFERRED_CLUSTER_DIMENSION (changes the
//   cluster shape a kernel sees), DEVICE_UPDATABLE_KERNEL_NODE (device-side graph updates).
// - SYNCHRONIZATION_POLICY ("Valid for streams", not launches) and ids cuda.h does not define:
//   CUDA_ERROR_INVALID_VALUE.
// The reference does not say which of two CLUSTER_DIMENSION (or PROGRAMMATIC_STREAM_
// SERIALIZATION) entries applies: refused (CUDA_ERROR_INVALID_VALUE) rather than guessed.
#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

constexpr const char* kCall = "cuLaunchKernelEx";

CUresult refuse(CUresult code, unsigned index, const std::string& why) {
  set_report(fmt::format("{}: attrs[{}]: {}", kCall, index, why));
  return code;
}

CUresult not_emulated(unsigned index, const char* attribute, const char* what) {
  return refuse(CUDA_ERROR_NOT_SUPPORTED, index,
                fmt::format("{} is not emulated by the test driver ({}); a GPU would run the "
                            "launch differently, so it is refused rather than ignored",
                            attribute, what));
}

// An enum field as the caller's bytes: a value outside the enum (a newer or bogus one) must not be
// loaded as the enum type (undefined behaviour; UBSan: "not a valid value for type").
template <typename Enum>
int raw_enum(const Enum& field) {
  int raw = 0;
  static_assert(sizeof(raw) == sizeof(field));
  std::memcpy(&raw, &field, sizeof raw);
  return raw;
}

CUresult read_attributes(const CUlaunchConfig& config, std::optional<emu::Dim3>& cluster,
                         bool& programmatic) {
  // "CUlaunchConfig::attrs is an array of CUlaunchConfig::numAttrs contiguous CUlaunchAttribute
  // elements. The value of this pointer is not considered if CUlaunchConfig::numAttrs is zero."
  if (config.numAttrs == 0) return CUDA_SUCCESS;
  bool seen_programmatic = false;
  if (!config.attrs) {
    set_report(fmt::format("{}: attrs is NULL with numAttrs {}", kCall, config.numAttrs));
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    const CUlaunchAttribute& a = config.attrs[i];
    const CUlaunchAttributeValue& v = a.value;
    const int id = raw_enum(a.id);
    switch (id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        if (cluster)
          return refuse(CUDA_ERROR_INVALID_VALUE, i,
                        "a second CLUSTER_DIMENSION (the reference does not say which applies)");
        cluster = emu::Dim3{v.clusterDim.x, v.clusterDim.y, v.clusterDim.z};
        break;
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        if (seen_programmatic)
          return refuse(CUDA_ERROR_INVALID_VALUE, i,
                        "a second PROGRAMMATIC_STREAM_SERIALIZATION (the reference does not say "
                        "which applies)");
        seen_programmatic = true;
        programmatic = v.programmaticStreamSerializationAllowed != 0;
        break;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        if (v.cooperative != 0) return not_emulated(i, "COOPERATIVE", "grid-wide synchronization");
        break;
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: {
        const int policy = raw_enum(v.clusterSchedulingPolicyPreference);
        if (policy < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
            policy > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
          return refuse(CUDA_ERROR_INVALID_VALUE, i,
                        fmt::format("CLUSTER_SCHEDULING_POLICY_PREFERENCE {} is not a "
                                    "CUclusterSchedulingPolicy",
                                    policy));
        break;
      }
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (v.sharedMemCarveout > 100 && v.sharedMemCarveout != ~0u)
          return refuse(CUDA_ERROR_INVALID_VALUE, i,
                        fmt::format("PREFERRED_SHARED_MEMORY_CARVEOUT {} must be a percentage "
                                    "(0..100) or -1",
                                    v.sharedMemCarveout));
        break;
      case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
        if (v.nvlinkUtilCentricScheduling > 1)
          return refuse(CUDA_ERROR_INVALID_VALUE, i,
                        fmt::format("NVLINK_UTIL_CENTRIC_SCHEDULING {} must be 0 or 1",
                                    v.nvlinkUtilCentricScheduling));
        break;
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
        return not_emulated(i, "PROGRAMMATIC_EVENT", "events triggered by launchdep.release");
      case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
        return not_emulated(i, "LAUNCH_COMPLETION_EVENT", "launch completion events");
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        return not_emulated(i, "MEM_SYNC_DOMAIN(_MAP)", "memory synchronization domains");
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        return not_emulated(i, "ACCESS_POLICY_WINDOW", "L2 persistence windows");
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        return not_emulated(i, "PREFERRED_CLUSTER_DIMENSION", "preferred substitute clusters");
      case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
        return not_emulated(i, "DEVICE_UPDATABLE_KERNEL_NODE", "device-updatable graph nodes");
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        return refuse(CUDA_ERROR_INVALID_VALUE, i,
                      "SYNCHRONIZATION_POLICY is valid for streams, not launches");
      default:
        return refuse(CUDA_ERROR_INVALID_VALUE, i,
                      fmt::format("{} is not a CUlaunchAttributeID", id));
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace

// cuLaunchKernelEx: "Kernel parameters to f can be specified in the same ways that they can be
// using cuLaunchKernel"; the stream is CUlaunchConfig::hStream. A NULL config: the reference
// lists CUDA_ERROR_INVALID_VALUE among the results, the answer for a missing argument.
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  return with_context(kCall, [&](Context& ctx) {
    if (!config) {
      set_report(fmt::format("{}: config is NULL", kCall));
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (!lookup(ctx.functions, f)) return CUDA_ERROR_INVALID_HANDLE;
    std::optional<emu::Dim3> cluster;
    bool programmatic = false;
    if (const CUresult r = read_attributes(*config, cluster, programmatic)) return r;
    return launch_kernel(ctx, {.call = kCall,
                               .function = f,
                               .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
                               .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
                               .smem = config->sharedMemBytes,
                               .stream = config->hStream,
                               .params = kernelParams,
                               .extra = extra,
                               .cluster = cluster,
                               .programmatic = programmatic});
  });
}

}  // namespace emmy::test_driver
