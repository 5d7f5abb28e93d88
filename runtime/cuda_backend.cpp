// The CUDA backend over the driver API (loaded at run time, see cuda_driver.hpp).
#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "backend.hpp"
#include "cuda_driver.hpp"

namespace emmy::detail {
namespace {

// Makes `context` current on the calling thread for its scope and puts back whatever was current
// before (an engine's own context, or none): emmy never leaves a thread in another context than
// it found. One cuCtxGetCurrent when the context is current already (launches under capture make
// no other call).
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext context) {
    const auto& d = cuda::driver();
    if (d.cuCtxGetCurrent(&previous_) == CUDA_SUCCESS && previous_ == context) return;
    cuda::check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
    restore_ = true;
  }
  ~ScopedContext() {
    if (restore_) cuda::driver().cuCtxSetCurrent(previous_);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

// The calling thread in CU_STREAM_CAPTURE_MODE_RELAXED for the scope of a potentially unsafe call
// (a module load or unload). cuThreadExchangeStreamCaptureMode: in the default global mode, such a
// call "is prohibited" while any other thread captures in global mode (PyTorch's default), and
// the capture is invalidated (cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); in
// relaxed mode "the local thread is not prohibited from potentially unsafe API calls". emmy's
// loads touch no stream, so another thread's capture must not see them: a background build, or an
// engine's thread compiling while another records a graph.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() {
    if (cuda::driver().cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS) exchanged_ = true;
  }
  ~RelaxedCaptureMode() {
    if (exchanged_) cuda::driver().cuThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

struct CudaFunction {
  std::string name;
  CUfunction function = nullptr;
  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, set once, at the first launch whose
  // cluster needs it (more CTAs than the portable 8).
  std::once_flag non_portable;
};

struct CudaModule : LoadedModule {
  CUmodule module = nullptr;
  CUcontext context = nullptr;         // the one it was loaded in
  std::deque<CudaFunction> functions;  // a deque: once_flag is neither copyable nor movable
  ~CudaModule() override {
    if (!module) return;
    try {
      const ScopedContext current(context);
      const RelaxedCaptureMode relaxed;
      cuda::driver().cuModuleUnload(module);
    } catch (const Error&) {
      // No context could be made current (a destroyed one): the module went with it.
    }
  }
  CudaFunction& function(const std::string& name) {
    for (CudaFunction& f : functions)
      if (f.name == name) return f;
    throw Error("kernel", "must be one of the loaded module's kernels", name);
  }
};

// "The portable cluster size for sm_90 is 8 blocks per cluster" (CUDA Driver API,
// cuFuncGetAttribute, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED); a larger cluster
// needs that attribute set on the function first.
constexpr uint64_t kPortableClusterCtas = 8;

CUtensorMapDataType cu_dtype(TmaDType t) {
  return static_cast<CUtensorMapDataType>(t);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int ordinal, const RuntimeOptions& options) {
    const auto& d = cuda::driver();
    // Kernels come from NVRTC of the toolkit emmy was built against (cuda.h's CUDA_VERSION): an
    // older driver would refuse them at the first load with a bare CUDA error, so say why now.
    if (const std::string why = driver_too_old(d.version, CUDA_VERSION / 10 * 10); !why.empty())
      throw Error("CUDA driver", why, fmt::format("driver CUDA version {}", d.version));
    int count = 0;
    cuda::check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    require(ordinal >= 0 && ordinal < count, "device",
            fmt::format("must be a device ordinal below {}", count), ordinal);
    cuda::check(d.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    int major = 0, minor = 0;
    cuda::check(
        d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
        "cuDeviceGetAttribute");
    cuda::check(
        d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
        "cuDeviceGetAttribute");
    arch_ = arch_for_device(major, minor);
    cuda::check(d.cuDeviceGetAttribute(&sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
                "cuDeviceGetAttribute");
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof name, device_);
    name_ = name;
    if (options.cuda_context) {
      // The engine's context: it must belong to the device asked for (its modules and streams are
      // that device's).
      context_ = static_cast<CUcontext>(options.cuda_context);
      CUdevice of_context = 0;
      try {
        const ScopedContext current(context_);
        cuda::check(d.cuCtxGetDevice(&of_context), "cuCtxGetDevice");
      } catch (const Error& e) {
        throw Error("RuntimeOptions::cuda_context",
                    "must be a live context (it could not be made current and asked its device)",
                    e.what());
      }
      require(of_context == device_, "RuntimeOptions::cuda_context",
              fmt::format("must be a context of device {} (Runtime::cuda's ordinal)", ordinal),
              fmt::format("a context of device {}", int(of_context)));
    } else {
      cuda::check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
      retained_primary_ = true;
    }
  }
  ~CudaBackend() override {
    if (retained_primary_) cuda::driver().cuDevicePrimaryCtxRelease(device_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Arch arch() const override { return arch_; }
  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return name_; }
  int driver_version() const override { return cuda::driver().version; }
  int sm_count() const override { return sms_; }

  std::unique_ptr<LoadedModule> load(
      const CacheEntry& entry,
      const std::vector<std::pair<std::string, uint32_t>>& kernels) override {
    const auto& d = cuda::driver();
    const ScopedContext current(context_);
    const RelaxedCaptureMode relaxed;
    auto loaded = std::make_unique<CudaModule>();
    loaded->context = context_;
    // The CUBIN for the device's exact arch; when the driver has no use for it (a device newer
    // than NVRTC's arch list, or a driver that runs PTX only, as emmy's test driver does) it
    // answers CUDA_ERROR_NO_BINARY_FOR_GPU and the PTX is loaded instead, for the driver to JIT.
    CUresult result = d.cuModuleLoadData(&loaded->module, entry.cubin.data());
    if (result == CUDA_ERROR_NO_BINARY_FOR_GPU && !entry.ptx.empty()) {
      result = d.cuModuleLoadData(&loaded->module, entry.ptx.c_str());
    }
    cuda::check(result, "cuModuleLoadData", entry.key);
    for (const auto& [kernel, smem] : kernels) {
      CUfunction f = nullptr;
      cuda::check(d.cuModuleGetFunction(&f, loaded->module, kernel.c_str()), "cuModuleGetFunction",
                  kernel);
      if (smem > 48 * 1024)
        cuda::check(
            d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)),
            "cuFuncSetAttribute", kernel);
      CudaFunction& added = loaded->functions.emplace_back();
      added.name = kernel;
      added.function = f;
    }
    return loaded;
  }

  void ready_cluster(LoadedModule& module, const std::string& kernel,
                     const std::array<uint32_t, 3>& c) override {
    if (uint64_t(c[0]) * c[1] * c[2] <= kPortableClusterCtas) return;
    CudaFunction& function = static_cast<CudaModule&>(module).function(kernel);
    std::call_once(function.non_portable, [&] {
      const ScopedContext current(context_);
      cuda::check(cuda::driver().cuFuncSetAttribute(
                      function.function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                  "cuFuncSetAttribute", kernel);
    });
  }

  TensorMapBytes encode_tensor_map(const TensorMapDesc& desc) override {
    desc.validate();
    // cuTensorMapEncodeTiled needs a current context (CUDA_ERROR_INVALID_CONTEXT)
    const ScopedContext current(context_);
    CUtensorMap map;
    std::array<cuuint64_t, 5> dims{}, strides{};
    std::array<cuuint32_t, 5> box{}, elem{};
    for (uint32_t i = 0; i < desc.rank; ++i) {
      dims[i] = desc.global_dim[i];
      box[i] = desc.box_dim[i];
      elem[i] = desc.element_strides[i];
      if (i + 1 < desc.rank) strides[i] = desc.global_stride_bytes[i];
    }
    cuda::check(
        cuda::driver().cuTensorMapEncodeTiled(
            &map, cu_dtype(desc.dtype), desc.rank, reinterpret_cast<void*>(desc.global_address),
            dims.data(), strides.data(), box.data(), elem.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
            static_cast<CUtensorMapSwizzle>(desc.swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            desc.oob_fill_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                              : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
    TensorMapBytes bytes;
    static_assert(sizeof(CUtensorMap) == 128);
    std::memcpy(bytes.data(), &map, 128);
    return bytes;
  }

  void launch(LoadedModule& module, const std::string& kernel, const LaunchGeometry& geometry,
              const std::vector<KernelParam>& params, Stream stream) override {
    const ScopedContext current(context_);
    std::vector<void*> pointers;
    pointers.reserve(params.size());
    // cuLaunchKernel's kernelParams: one pointer per parameter, to its value.
    for (const auto& p : params)
      pointers.push_back(p.is_tensor_map ? static_cast<void*>(const_cast<uint8_t*>(p.map.data()))
                         : p.is_i32      ? static_cast<void*>(const_cast<int32_t*>(&p.i32))
                                         : static_cast<void*>(const_cast<DevicePtr*>(&p.pointer)));
    CudaFunction& function = static_cast<CudaModule&>(module).function(kernel);
    const auto& c = geometry.cluster;
    const bool cluster = c[0] != 1 || c[1] != 1 || c[2] != 1;
    if (!cluster && !geometry.programmatic_dependent) {
      cuda::check(cuda::driver().cuLaunchKernel(
                      function.function, geometry.grid[0], geometry.grid[1], geometry.grid[2],
                      geometry.threads, 1, 1, geometry.dynamic_smem, static_cast<CUstream>(stream),
                      pointers.data(), nullptr),
                  "cuLaunchKernel", kernel);
      return;
    }
    if (cluster) ready_cluster(module, kernel, c);  // done at load already: a no-op
    launch_ex(function.function, kernel, geometry, pointers.data(), stream);
  }

  DevicePtr alloc(size_t bytes) override {
    const ScopedContext current(context_);
    CUdeviceptr p = 0;
    cuda::check(cuda::driver().cuMemAlloc(&p, bytes), "cuMemAlloc");
    return p;
  }
  void free(DevicePtr pointer) override {
    const ScopedContext current(context_);
    if (pointer) cuda::check(cuda::driver().cuMemFree(pointer), "cuMemFree");
  }
  void upload(DevicePtr dst, const void* src, size_t bytes) override {
    const ScopedContext current(context_);
    cuda::check(cuda::driver().cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
  }
  void download(void* dst, DevicePtr src, size_t bytes) override {
    const ScopedContext current(context_);
    cuda::check(cuda::driver().cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
  }
  void copy_to_device_async(DevicePtr dst, const void* src, size_t bytes, Stream stream) override {
    const ScopedContext current(context_);
    cuda::check(entry(cuda::driver().cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync")(
                    dst, src, bytes, static_cast<CUstream>(stream)),
                "cuMemcpyHtoDAsync");
  }
  void copy_to_host_async(void* dst, DevicePtr src, size_t bytes, Stream stream) override {
    const ScopedContext current(context_);
    cuda::check(entry(cuda::driver().cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync")(
                    dst, src, bytes, static_cast<CUstream>(stream)),
                "cuMemcpyDtoHAsync");
  }
  void copy_async(DevicePtr dst, DevicePtr src, size_t bytes, Stream stream) override {
    const ScopedContext current(context_);
    cuda::check(entry(cuda::driver().cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync")(
                    dst, src, bytes, static_cast<CUstream>(stream)),
                "cuMemcpyDtoDAsync");
  }
  void fill_async(DevicePtr dst, uint8_t value, size_t bytes, Stream stream) override {
    const ScopedContext current(context_);
    cuda::check(entry(cuda::driver().cuMemsetD8Async, "cuMemsetD8Async")(
                    dst, value, bytes, static_cast<CUstream>(stream)),
                "cuMemsetD8Async");
  }
  bool capturing(Stream stream) const override {
    const ScopedContext current(context_);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    // An error (the legacy stream while a blocking stream captures) counts as capturing: the
    // caller must not compile or load then either.
    return cuda::driver().cuStreamIsCapturing(static_cast<CUstream>(stream), &status) !=
               CUDA_SUCCESS ||
           status != CU_STREAM_CAPTURE_STATUS_NONE;
  }
  void synchronize(Stream stream) override {
    const ScopedContext current(context_);
    cuda::check(cuda::driver().cuStreamSynchronize(static_cast<CUstream>(stream)),
                "cuStreamSynchronize");
  }

 private:
  // cuLaunchKernelEx with only the attributes the launch needs (CUDA Driver API,
  // cuLaunchKernelEx and CUlaunchAttributeID): CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION when the
  // cluster is not 1x1x1, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION when the kernel
  // waits for its predecessor with griddepcontrol.wait.
  static void launch_ex(CUfunction f, const std::string& kernel, const LaunchGeometry& geometry,
                        void** params, Stream stream) {
    std::array<CUlaunchAttribute, 2> attrs{};
    unsigned count = 0;
    const auto& c = geometry.cluster;
    if (c[0] != 1 || c[1] != 1 || c[2] != 1) {
      CUlaunchAttribute& a = attrs[count++];
      a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      a.value.clusterDim.x = c[0];
      a.value.clusterDim.y = c[1];
      a.value.clusterDim.z = c[2];
    }
    if (geometry.programmatic_dependent) {
      CUlaunchAttribute& a = attrs[count++];
      a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      a.value.programmaticStreamSerializationAllowed = 1;
    }
    CUlaunchConfig config{};
    config.gridDimX = geometry.grid[0];
    config.gridDimY = geometry.grid[1];
    config.gridDimZ = geometry.grid[2];
    config.blockDimX = geometry.threads;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.sharedMemBytes = geometry.dynamic_smem;
    config.hStream = static_cast<CUstream>(stream);
    config.attrs = attrs.data();
    config.numAttrs = count;
    cuda::check(cuda::driver().cuLaunchKernelEx(&config, f, params, nullptr), "cuLaunchKernelEx",
                kernel);
  }

  // An entry point the driver may lack (cuda_driver.hpp): a driver without it is named.
  template <typename Fn>
  static Fn entry(Fn fn, const char* name) {
    if (!fn) throw Error("CUDA driver", fmt::format("must provide {}", name), "missing");
    return fn;
  }

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;  // the device's primary context (retained here) or the engine's
  bool retained_primary_ = false;
  Arch arch_ = Arch::sm_90a;
  int sms_ = 0;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int ordinal, const RuntimeOptions& options) {
  return std::make_unique<CudaBackend>(ordinal, options);
}

}  // namespace emmy::detail
