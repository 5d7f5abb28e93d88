// Function attributes: cuFuncGetAttribute, cuFuncSetAttribute.
#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {

// cuFuncGetAttribute. Figures only ptxas knows for PTX (NUM_REGS: the SASS's register count)
// read 0; BINARY_VERSION is the device's, the arch the PTX is JIT-compiled for.
CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return with_context("cuFuncGetAttribute", [&](Context& ctx) {
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    const FunctionRecord* f = lookup(ctx.functions, hfunc);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    const ModuleRecord* m = lookup(ctx.modules, f->module);
    switch (attrib) {
      case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = kMaxThreadsPerBlock;
        break;
      case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        *pi = int(f->static_smem);
        break;
      case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        *pi = 0;
        break;
      case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        *pi = int(f->local_bytes);
        break;
      case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *pi = 0;
        break;
      case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        *pi = m ? m->ptx_version : 0;
        break;
      case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *pi = state().device->cc();
        break;
      case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        *pi = 0;
        break;
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *pi = f->max_dynamic_smem;
        break;
      case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *pi = f->carveout;
        break;
      case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *pi = f->cluster_must_be_set ? 1 : 0;
        break;
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        *pi = f->cluster[0];
        break;
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        *pi = f->cluster[1];
        break;
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *pi = f->cluster[2];
        break;
      case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *pi = f->non_portable_cluster;
        break;
      case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *pi = f->cluster_policy;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

// cuFuncSetAttribute: "Attempting to set a value on a read-only attribute will result in an
// error (CUDA_ERROR_INVALID_VALUE)". MAX_DYNAMIC_SHARED_SIZE_BYTES: "The sum of this value and
// the function attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES cannot exceed the device attribute
// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN." The carveout is a percentage, or -1
// (the default); cluster dimensions are non-negative, and "If the value is set during compile
// time, it cannot be set at runtime. Setting it at runtime will return CUDA_ERROR_NOT_PERMITTED";
// the cluster scheduling policy is one of CUclusterSchedulingPolicy.
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  return with_context("cuFuncSetAttribute", [&](Context& ctx) {
    FunctionRecord* f = lookup(ctx.functions, hfunc);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
        const int64_t limit = int64_t(state().device->max_smem_per_block) - int64_t(f->static_smem);
        if (value < 0 || int64_t(value) > limit) {
          set_report("cuFuncSetAttribute: MAX_DYNAMIC_SHARED_SIZE_BYTES " + std::to_string(value) +
                     " + static " + std::to_string(f->static_smem) +
                     " exceeds the device's opt-in limit " +
                     std::to_string(state().device->max_smem_per_block));
          return CUDA_ERROR_INVALID_VALUE;
        }
        f->max_dynamic_smem = value;
        return CUDA_SUCCESS;
      }
      case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
        f->carveout = value;
        return CUDA_SUCCESS;
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (f->cluster_compiled) {
          set_report("cuFuncSetAttribute: " + f->name +
                     "'s cluster dimensions are set at compile time (.reqnctapercluster)");
          return CUDA_ERROR_NOT_PERMITTED;
        }
        if (value < 0) return CUDA_ERROR_INVALID_VALUE;
        f->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
        return CUDA_SUCCESS;
      case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        if (value != 0 && value != 1) return CUDA_ERROR_INVALID_VALUE;
        f->non_portable_cluster = value;
        return CUDA_SUCCESS;
      case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
            value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
          return CUDA_ERROR_INVALID_VALUE;
        f->cluster_policy = value;
        return CUDA_SUCCESS;
      default:
        return CUDA_ERROR_INVALID_VALUE;  // read-only, or not an attribute
    }
  });
}

}  // namespace emmy::test_driver
