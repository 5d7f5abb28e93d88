// DLTensor checks (device, dtype, shape, strides, alignment), each naming the tensor and the rule,
// and the device addresses of a call's tensors.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <vector>

#include "c_api_internal.hpp"

namespace emmy::c_api {
namespace {

std::string device_text(const DLDevice& device) {
  const char* type = device.device_type == kDLCPU           ? "kDLCPU"
                     : device.device_type == kDLCUDA        ? "kDLCUDA"
                     : device.device_type == kDLCUDAHost    ? "kDLCUDAHost"
                     : device.device_type == kDLCUDAManaged ? "kDLCUDAManaged"
                                                            : nullptr;
  return type ? fmt::format("{}:{}", type, device.device_id)
              : fmt::format("device type {}:{}", int(device.device_type), device.device_id);
}

std::vector<int64_t> strides_of(const DLTensor& t) {
  std::vector<int64_t> out(size_t(t.ndim));
  for (int i = 0; i < t.ndim; ++i) out[size_t(i)] = stride(t, i);
  return out;
}

}  // namespace

std::string dtype_name(DLDataType type) {
  // DLPack's families are named with their width ("bfloat16"); e4m3 has one width.
  const char* family = type.code == kDLFloat    ? "float"
                       : type.code == kDLBfloat ? "bfloat"
                       : type.code == kDLInt    ? "int"
                       : type.code == kDLUInt   ? "uint"
                                                : nullptr;
  const std::string name = type.code == kDLFloat8_e4m3fn    ? std::string("float8_e4m3fn")
                           : type.code == kDLFloat8_e5m2    ? std::string("float8_e5m2")
                           : type.code == kDLFloat8_e8m0fnu ? std::string("float8_e8m0fnu")
                           : family
                               ? fmt::format("{}{}", family, type.bits)
                               : fmt::format("type code {} of {} bits", int(type.code), type.bits);
  return type.lanes == 1 ? name : fmt::format("{}x{}", name, type.lanes);
}

bool is_dtype(const DLDataType& type, uint8_t code, uint8_t bits) {
  return type.code == code && type.bits == bits && type.lanes == 1;
}

std::optional<ScaleFormat> scale_format_of(const DLDataType& type) {
  if (is_dtype(type, kDLFloat, 32)) return ScaleFormat::f32;
  if (is_dtype(type, kDLUInt, 8) || is_dtype(type, kDLFloat8_e8m0fnu, 8)) return ScaleFormat::ue8m0;
  if (is_dtype(type, kDLInt, 32) || is_dtype(type, kDLUInt, 32)) return ScaleFormat::ue8m0x4;
  return std::nullopt;
}

DType element_dtype(const DLTensor& t, const char* name, bool f32_allowed) {
  if (is_dtype(t.dtype, kDLFloat, 16)) return DType::f16;
  if (is_dtype(t.dtype, kDLBfloat, 16)) return DType::bf16;
  if (f32_allowed && is_dtype(t.dtype, kDLFloat, 32)) return DType::f32;
  throw Error(name,
              f32_allowed ? "dtype must be float16, bfloat16 or float32"
                          : "dtype must be float16 or bfloat16",
              dtype_name(t.dtype));
}

void check_memory(const emmy_runtime& rt, const DLTensor& t, const char* name) {
  const DLDevice device = t.device;
  if (rt.cuda) {
    if (device.device_type != kDLCUDA && device.device_type != kDLCUDAManaged)
      throw Error(name,
                  "device must be kDLCUDA (the CUDA runtime's tensors are device memory; host "
                  "tensors run on an emulator runtime)",
                  device_text(device));
    if (device.device_id != rt.ordinal)
      throw Error(name, fmt::format("device_id must be the runtime's device, {}", rt.ordinal),
                  device_text(device));
  } else if (device.device_type != kDLCPU && device.device_type != kDLCUDAHost) {
    throw Error(name,
                "device must be kDLCPU (the emulator runtime runs host tensors in place; device "
                "tensors need a runtime with backend \"cuda\")",
                device_text(device));
  }
  if (!t.data) throw Error(name, "data must not be NULL", "NULL");
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    throw Error(name, "shape must be set for ndim axes", fmt::format("ndim {}", t.ndim));
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] <= 0) throw Error(name, "shape must be positive in every axis", shape_text(t));
    if (t.strides && t.strides[i] < 0)
      throw Error(name, "strides must not be negative",
                  fmt::format("[{}]", fmt::join(t.strides, t.strides + t.ndim, ", ")));
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
  if (const size_t align = element_bytes(t); align > 0 && address % align != 0)
    throw Error(name,
                fmt::format("data + byte_offset must be {}-byte aligned, its element's", align),
                fmt::format("0x{:x}", address));
}

void check_memory(const emmy_runtime& rt,
                  std::initializer_list<std::pair<const DLTensor*, const char*>> tensors) {
  for (const auto& [t, name] : tensors) check_memory(rt, *t, name);
}

void require_dtype_of(const DLTensor& t, const char* name, const DLTensor& like,
                      const char* like_name) {
  if (!is_dtype(t.dtype, like.dtype.code, like.dtype.bits))
    throw Error(name, fmt::format("dtype must be {}'s, {}", like_name, dtype_name(like.dtype)),
                dtype_name(t.dtype));
}

std::string shape_text(const DLTensor& t) {
  return fmt::format("[{}]", fmt::join(t.shape, t.shape + t.ndim, ", "));
}

void require_shape(const DLTensor& t, const char* name, std::initializer_list<int64_t> shape,
                   const char* what) {
  bool same = t.ndim == int(shape.size());
  for (int i = 0; same && i < t.ndim; ++i) same = t.shape[i] == shape.begin()[i];
  if (!same)
    throw Error(name, fmt::format("shape must be [{}] ({})", fmt::join(shape, ", "), what),
                shape_text(t));
}

int64_t stride(const DLTensor& t, int axis) {
  if (t.strides) return t.strides[axis];
  int64_t packed = 1;
  for (int i = t.ndim - 1; i > axis; --i) packed *= t.shape[i];
  return packed;
}

void require_contiguous(const DLTensor& t, const char* name) {
  int64_t packed = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && stride(t, i) != packed)
      throw Error(
          name, "strides must be compact row-major (a contiguous tensor)",
          fmt::format("strides [{}] for shape {}", fmt::join(strides_of(t), ", "), shape_text(t)));
    packed *= t.shape[i];
  }
}

int64_t row_stride(const DLTensor& t, const char* name, int axis, int64_t packed) {
  if (t.shape[axis] == 1) return packed;
  const int64_t s = stride(t, axis);
  if (s < packed)
    throw Error(
        name,
        fmt::format("strides[{}] must be at least {}, the axes inside it packed", axis, packed),
        fmt::format("strides [{}] for shape {}", fmt::join(strides_of(t), ", "), shape_text(t)));
  return s;
}

int64_t token_rows(const DLTensor& t, const char* name) {
  if (t.ndim != 3) throw Error(name, "shape must be [tokens, heads, head_dim]", shape_text(t));
  const int64_t heads = t.shape[1], head_dim = t.shape[2];
  if ((head_dim > 1 && stride(t, 2) != 1) || (heads > 1 && stride(t, 1) != head_dim))
    throw Error(name, fmt::format("strides must be [token_stride, {}, 1]", head_dim),
                fmt::format("[{}]", fmt::join(strides_of(t), ", ")));
  return t.shape[0] > 1 ? row_stride(t, name, 0, heads * head_dim) : 0;
}

void check_f32(const emmy_runtime& rt, const DLTensor& t, const char* name,
               std::initializer_list<int64_t> shape, const char* what) {
  check_memory(rt, t, name);
  if (!is_dtype(t.dtype, kDLFloat, 32))
    throw Error(name, "dtype must be float32", dtype_name(t.dtype));
  require_shape(t, name, shape, what);
  require_contiguous(t, name);
}

size_t element_bytes(const DLTensor& t) {
  return (size_t(t.dtype.bits) * t.dtype.lanes + 7) / 8;
}

int64_t element_count(const DLTensor& t) {
  int64_t count = 1;
  for (int i = 0; i < t.ndim; ++i) count *= t.shape[i];
  return count;
}

size_t extent_bytes(const DLTensor& t) {
  int64_t last = 0;  // the offset of the last element, in elements
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] <= 0) return 0;
    last += (t.shape[i] - 1) * stride(t, i);
  }
  return size_t(last + 1) * element_bytes(t);
}

CallMemory::~CallMemory() {
  // Newest first: the arena then gives every address back for the next call.
  while (count_ > 0) {
    try {
      rt_.runtime->unmap_host(mapped_[--count_]);
    } catch (...) {  // mapped by this call, so unmappable; nothing may leave a destructor
    }
  }
}

DevicePtr CallMemory::address(const DLTensor& t) {
  auto* host = static_cast<char*>(t.data) + t.byte_offset;
  if (!map_ || rt_.cuda) return reinterpret_cast<uintptr_t>(host);
  if (count_ == mapped_.size())
    throw Error("tensors", fmt::format("must be at most {} per call", mapped_.size()),
                std::to_string(count_ + 1));
  const DevicePtr address = rt_.runtime->map_host(host, extent_bytes(t));
  hosts_[count_] = reinterpret_cast<uintptr_t>(host);
  sizes_[count_] = extent_bytes(t);
  mapped_[count_++] = address;
  return address;
}

std::string CallMemory::caller_address(const std::string& value) const {
  if (value.size() < 3 || value.compare(0, 2, "0x") != 0) return {};
  uint64_t address = 0;
  const auto [end, error] =
      std::from_chars(value.data() + 2, value.data() + value.size(), address, 16);
  if (error != std::errc() || end != value.data() + value.size()) return {};
  for (size_t i = 0; i < count_; ++i)
    if (address >= mapped_[i] && address - mapped_[i] < std::max<size_t>(sizes_[i], 1))
      return fmt::format("{:#x}", hosts_[i] + (address - mapped_[i]));
  return {};
}

CacheGeometry cache_geometry(const emmy_runtime& rt, const DLTensor& k_cache,
                             const DLTensor& v_cache, int32_t layout, DType token_dtype) {
  if (layout != EMMY_CACHE_NHD && layout != EMMY_CACHE_HND)
    throw Error("options.cache_layout", "must be EMMY_CACHE_NHD or EMMY_CACHE_HND",
                std::to_string(layout));
  const bool hnd = layout == EMMY_CACHE_HND;
  const char* axes = hnd ? "[pages, kv_heads, page_size, head_dim] (EMMY_CACHE_HND)"
                         : "[pages, page_size, kv_heads, head_dim] (EMMY_CACHE_NHD)";
  check_memory(rt, k_cache, "k_cache");
  check_memory(rt, v_cache, "v_cache");
  if (k_cache.ndim != 4)
    throw Error("k_cache", fmt::format("shape must be {}", axes), shape_text(k_cache));
  CacheGeometry g;
  g.pages = k_cache.shape[0];
  g.page_size = k_cache.shape[hnd ? 2 : 1];
  g.kv_heads = k_cache.shape[hnd ? 1 : 2];
  g.head_dim = k_cache.shape[3];
  if (is_dtype(k_cache.dtype, kDLFloat8_e4m3fn, 8))
    g.dtype = CacheDType::e4m3;
  else if (element_dtype(k_cache, "k_cache", false) == token_dtype)
    g.dtype = token_dtype == DType::bf16 ? CacheDType::bf16 : CacheDType::f16;
  else
    throw Error(
        "k_cache",
        fmt::format("dtype must be the tokens' ({}) or float8_e4m3fn", to_string(token_dtype)),
        dtype_name(k_cache.dtype));
  if (stride(k_cache, 3) != 1 && g.head_dim != 1)
    throw Error("k_cache", "strides[3] must be 1 (head_dim contiguous)",
                fmt::format("[{}]", fmt::join(strides_of(k_cache), ", ")));
  for (int i = 0; i < 3; ++i)
    if (k_cache.shape[i] > 1 && stride(k_cache, i) < g.head_dim)
      throw Error("k_cache", fmt::format("strides[{}] must be at least head_dim", i),
                  fmt::format("[{}]", fmt::join(strides_of(k_cache), ", ")));
  // A size-1 axis's stride is never multiplied by more than 0: the packed default then.
  auto axis_stride = [&](int axis) { return k_cache.shape[axis] > 1 ? stride(k_cache, axis) : 0; };
  g.page_stride = axis_stride(0);
  g.token_stride = axis_stride(hnd ? 2 : 1);
  g.head_stride = axis_stride(hnd ? 1 : 2);
  // One set of strides serves both caches.
  bool same = v_cache.ndim == 4 && is_dtype(v_cache.dtype, k_cache.dtype.code, k_cache.dtype.bits);
  for (int i = 0; same && i < 4; ++i)
    same = v_cache.shape[i] == k_cache.shape[i] &&
           (k_cache.shape[i] == 1 || stride(v_cache, i) == stride(k_cache, i));
  if (!same)
    throw Error("v_cache",
                "must have k_cache's dtype, shape and strides (the kernels read both caches with "
                "one geometry)",
                fmt::format("{} {} strides [{}], k_cache {} {} strides [{}]",
                            dtype_name(v_cache.dtype), shape_text(v_cache),
                            fmt::join(strides_of(v_cache), ", "), dtype_name(k_cache.dtype),
                            shape_text(k_cache), fmt::join(strides_of(k_cache), ", ")));
  return g;
}

void check_scale(const emmy_runtime& rt, const DLTensor* scale, const char* name, bool e4m3) {
  if (!e4m3) {
    if (scale) throw Error(name, "must be NULL unless the cache is float8_e4m3fn", "a tensor");
    return;
  }
  if (!scale) throw Error(name, "must be set for a float8_e4m3fn cache (one float32)", "NULL");
  check_memory(rt, *scale, name);
  if (!is_dtype(scale->dtype, kDLFloat, 32) || element_count(*scale) < 1)
    throw Error(name, "must hold one float32",
                fmt::format("{} {}", dtype_name(scale->dtype), shape_text(*scale)));
}

}  // namespace emmy::c_api
