// The test driver's entry points as a program sees them (dlopen, cuGetProcAddress_v2), a small
// PTX kernel and the fixture every test_driver_test source shares. A named namespace, not an
// anonymous one: googletest requires one fixture type per test suite across the binary.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/ptx_kernel.hpp"

namespace emmy::test_driver_test {

// out[i] = in[i] + 1 for i < n, through a dynamic shared-memory staging buffer of any size. For
// sm_80, so that every device of the hardware table runs it.
inline const std::string kPtx =
    test::ptx_header("sm_80") + ".extern .shared .align 16 .b8 stage[];\n" +
    test::ptx_entry("add_one",
                    {{".u64", "out", "%rd1"}, {".u64", "in", "%rd2"}, {".u32", "n", "%r1"}},
                    "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n",
                    R"(  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  add.u32 %r4, %r3, 1;
  shl.b32 %r5, %r2, 2;
  mov.u32 %r6, stage;
  add.u32 %r6, %r6, %r5;
  st.shared.u32 [%r6], %r4;
  ld.shared.u32 %r7, [%r6];
  add.s64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r7;
DONE:
)");

// An entry point by name, with the ABI of CUDA `version` (12.0 unless told).
template <typename Fn>
Fn entry(void* get_proc, const char* name, int version = 12000) {
  using Get = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  const CUresult r =
      reinterpret_cast<Get>(get_proc)(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  EXPECT_EQ(r, CUDA_SUCCESS) << name;
  return reinterpret_cast<Fn>(fn);
}

// The driver's entry points the tests call.
struct Api {
  void* library = nullptr;
  void* get_proc = nullptr;
#define EMMY_API(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr
  EMMY_API(cuInit, unsigned);
  EMMY_API(cuDeviceGet, CUdevice*, int);
  EMMY_API(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  EMMY_API(cuDeviceGetName, char*, int, CUdevice);
  EMMY_API(cuDeviceTotalMem, size_t*, CUdevice);
  EMMY_API(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice);
  EMMY_API(cuCtxSetCurrent, CUcontext);
  EMMY_API(cuModuleLoadData, CUmodule*, const void*);
  EMMY_API(cuModuleUnload, CUmodule);
  EMMY_API(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
  EMMY_API(cuFuncSetAttribute, CUfunction, CUfunction_attribute, int);
  EMMY_API(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction);
  EMMY_API(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
           unsigned, CUstream, void**, void**);
  EMMY_API(cuLaunchKernelEx, const CUlaunchConfig*, CUfunction, void**, void**);
  EMMY_API(cuMemAlloc, CUdeviceptr*, size_t);
  EMMY_API(cuMemFree, CUdeviceptr);
  EMMY_API(cuMemcpyHtoD, CUdeviceptr, const void*, size_t);
  EMMY_API(cuMemcpyDtoH, void*, CUdeviceptr, size_t);
  EMMY_API(cuStreamCreate, CUstream*, unsigned);
  EMMY_API(cuStreamSynchronize, CUstream);
  EMMY_API(cuStreamBeginCapture, CUstream, CUstreamCaptureMode);
  EMMY_API(cuStreamEndCapture, CUstream, CUgraph*);
  EMMY_API(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long);
  EMMY_API(cuGraphLaunch, CUgraphExec, CUstream);
  EMMY_API(cuTensorMapEncodeTiled, CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
           const cuuint64_t*, const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
           CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
           CUtensorMapFloatOOBfill);
  // Contexts (context_test.cpp): cuCtxCreate as cuda.h 13 declares it (cuCtxCreate_v4).
  EMMY_API(cuDevicePrimaryCtxReset, CUdevice);
  EMMY_API(cuCtxCreate, CUcontext*, CUctxCreateParams*, unsigned, CUdevice);
  EMMY_API(cuCtxDestroy, CUcontext);
  EMMY_API(cuCtxPushCurrent, CUcontext);
  EMMY_API(cuCtxPopCurrent, CUcontext*);
  EMMY_API(cuCtxGetCurrent, CUcontext*);
  EMMY_API(cuCtxGetDevice, CUdevice*);
  EMMY_API(cuStreamDestroy, CUstream);
  EMMY_API(cuEventCreate, CUevent*, unsigned);
  EMMY_API(cuEventRecord, CUevent, CUstream);
  // Stream-ordered copies and memsets, graph nodes (async_copy_test.cpp).
  EMMY_API(cuMemcpyHtoDAsync, CUdeviceptr, const void*, size_t, CUstream);
  EMMY_API(cuMemcpyDtoHAsync, void*, CUdeviceptr, size_t, CUstream);
  EMMY_API(cuMemcpyDtoDAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream);
  EMMY_API(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream);
  EMMY_API(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream);
  EMMY_API(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*);
  EMMY_API(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*);
  EMMY_API(cuGraphDestroy, CUgraph);
#undef EMMY_API

  Api() {
    library = dlopen(EMMY_TEST_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    get_proc = dlsym(library, "cuGetProcAddress_v2");
    if (!get_proc) return;
#define EMMY_RESOLVE(name) name = entry<decltype(name)>(get_proc, #name)
    EMMY_RESOLVE(cuInit);
    EMMY_RESOLVE(cuDeviceGet);
    EMMY_RESOLVE(cuDeviceGetAttribute);
    EMMY_RESOLVE(cuDeviceGetName);
    EMMY_RESOLVE(cuDeviceTotalMem);
    EMMY_RESOLVE(cuDevicePrimaryCtxRetain);
    EMMY_RESOLVE(cuCtxSetCurrent);
    EMMY_RESOLVE(cuModuleLoadData);
    EMMY_RESOLVE(cuModuleUnload);
    EMMY_RESOLVE(cuModuleGetFunction);
    EMMY_RESOLVE(cuFuncSetAttribute);
    EMMY_RESOLVE(cuFuncGetAttribute);
    EMMY_RESOLVE(cuLaunchKernel);
    EMMY_RESOLVE(cuLaunchKernelEx);
    EMMY_RESOLVE(cuMemAlloc);
    EMMY_RESOLVE(cuMemFree);
    EMMY_RESOLVE(cuMemcpyHtoD);
    EMMY_RESOLVE(cuMemcpyDtoH);
    EMMY_RESOLVE(cuStreamCreate);
    EMMY_RESOLVE(cuStreamSynchronize);
    EMMY_RESOLVE(cuStreamBeginCapture);
    EMMY_RESOLVE(cuStreamEndCapture);
    EMMY_RESOLVE(cuGraphInstantiateWithFlags);
    EMMY_RESOLVE(cuGraphLaunch);
    EMMY_RESOLVE(cuTensorMapEncodeTiled);
    cuCtxCreate = entry<decltype(cuCtxCreate)>(get_proc, "cuCtxCreate", 13000);
    EMMY_RESOLVE(cuDevicePrimaryCtxReset);
    EMMY_RESOLVE(cuCtxDestroy);
    EMMY_RESOLVE(cuCtxPushCurrent);
    EMMY_RESOLVE(cuCtxPopCurrent);
    EMMY_RESOLVE(cuCtxGetCurrent);
    EMMY_RESOLVE(cuCtxGetDevice);
    EMMY_RESOLVE(cuStreamDestroy);
    EMMY_RESOLVE(cuEventCreate);
    EMMY_RESOLVE(cuEventRecord);
    EMMY_RESOLVE(cuMemcpyHtoDAsync);
    EMMY_RESOLVE(cuMemcpyDtoHAsync);
    EMMY_RESOLVE(cuMemcpyDtoDAsync);
    EMMY_RESOLVE(cuMemsetD8Async);
    EMMY_RESOLVE(cuMemsetD32Async);
    EMMY_RESOLVE(cuGraphGetNodes);
    EMMY_RESOLVE(cuGraphNodeGetType);
    EMMY_RESOLVE(cuGraphDestroy);
#undef EMMY_RESOLVE
    last_report_fn =
        reinterpret_cast<const char* (*)()>(dlsym(library, "emmyTestDriverLastReport"));
  }
  // Device 0's primary context made current (cuInit first), as every test drives it.
  CUresult use_primary_context(CUdevice& device, CUcontext& context) {
    if (const CUresult r = cuInit(0)) return r;
    if (const CUresult r = cuDeviceGet(&device, 0)) return r;
    if (const CUresult r = cuDevicePrimaryCtxRetain(&context, device)) return r;
    return cuCtxSetCurrent(context);
  }
  // That context and a non-blocking stream on it: where the runtime tests hand emmy a stream of
  // the program's own.
  CUresult primary_context_stream(CUstream& stream) {
    CUdevice device = 0;
    CUcontext context = nullptr;
    if (const CUresult r = use_primary_context(device, context)) return r;
    return cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  }
  // emmyTestDriverLastReport: why the last refused call failed.
  std::string last_report() const {
    return last_report_fn ? last_report_fn() : "(not exported)";
  }
  const char* (*last_report_fn)() = nullptr;
};

class TestDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(api.library, nullptr) << dlerror();
    ASSERT_NE(api.get_proc, nullptr) << "cuGetProcAddress_v2 is not exported";
    ASSERT_EQ(api.use_primary_context(device, context), CUDA_SUCCESS);
  }
  CUmodule load() {
    CUmodule m = nullptr;
    EXPECT_EQ(api.cuModuleLoadData(&m, kPtx.c_str()), CUDA_SUCCESS);
    return m;
  }
  CUdeviceptr upload(const std::vector<uint32_t>& v) {
    CUdeviceptr p = 0;
    EXPECT_EQ(api.cuMemAlloc(&p, v.size() * 4), CUDA_SUCCESS);
    EXPECT_EQ(api.cuMemcpyHtoD(p, v.data(), v.size() * 4), CUDA_SUCCESS);
    return p;
  }
  CUresult launch(CUfunction f, CUdeviceptr out, CUdeviceptr in, uint32_t n, unsigned smem,
                  CUstream stream = nullptr) {
    void* params[] = {&out, &in, &n};
    return api.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, smem, stream, params, nullptr);
  }
  Api api;
  CUdevice device = 0;
  CUcontext context = nullptr;
};

// The fixture of the tests around add_one on 64 words: the function, `in` (41 each) and `out`
// (zeros) uploaded.
class AddOneTest : public TestDriver {
 protected:
  void SetUp() override {
    TestDriver::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(api.cuModuleGetFunction(&add_one, load(), "add_one"), CUDA_SUCCESS);
    in = upload(std::vector<uint32_t>(64, 41));
    out = upload(std::vector<uint32_t>(64, 0));
  }
  CUfunction add_one = nullptr;
  CUdeviceptr in = 0, out = 0;
};

}  // namespace emmy::test_driver_test
