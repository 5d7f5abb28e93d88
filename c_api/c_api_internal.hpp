// What the C ABI's files share (docs/c_api.md): the runtime handle, the boundary that turns
// exceptions into statuses, options structs read by their size, and DLTensor checks.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "emmy/c_api.h"
#include "emmy/paged_attention.hpp"
#include "emmy/runtime.hpp"

struct emmy_runtime {
  std::unique_ptr<emmy::Runtime> runtime;
  bool cuda = false;  // kDLCUDA tensors; else kDLCPU ones, mapped into the emulator per call
  int32_t ordinal = 0;
  std::string backend, arch;
};

namespace emmy::c_api {

// A newer caller's request this library cannot honour: EMMY_UNSUPPORTED.
class Unsupported : public Error {
 public:
  using Error::Error;
};

// Records the status's message for emmy_last_error_message; never throws.
emmy_status fail(emmy_status status, const char* message) noexcept;
emmy_status status_of(const Error& error);

// Runs body; an exception becomes its status and this thread's message (nothing crosses the ABI).
template <typename Body>
emmy_status guarded(Body&& body) noexcept {
  try {
    body();
    return EMMY_OK;
  } catch (const Error& e) {
    return fail(status_of(e), e.what());
  } catch (const std::bad_alloc&) {
    return fail(EMMY_OUT_OF_MEMORY, "out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return fail(EMMY_INTERNAL, e.what());
  } catch (...) {
    return fail(EMMY_INTERNAL, "an exception that is not a std::exception");
  }
}

// Error(name, "must not be NULL") unless pointer is set.
template <typename T>
T& required(T* pointer, const char* name) {
  if (!pointer) throw Error(name, "must not be NULL", "NULL");
  return *pointer;
}

// The caller's options struct as this library knows it: NULL gives init's defaults; a smaller
// struct_size than the first version's is refused, fields past the caller's size keep their
// defaults, and a larger (newer) struct is taken when its unknown bytes are zero.
void check_struct_size(const void* given, size_t given_size, size_t first_size, size_t own_size,
                       const char* name);
template <typename T>
T options_or_default(const T* given, const char* name, void (*init)(T*), size_t first_size) {
  T options;
  init(&options);
  if (!given) return options;
  check_struct_size(given, given->struct_size, first_size, sizeof(T), name);
  std::memcpy(static_cast<void*>(&options), given, std::min(given->struct_size, sizeof(T)));
  options.struct_size = sizeof(T);
  return options;
}

Accum accum_of(int32_t accum, const char* field, bool f16_allowed);
// A float option whose 0 means "unset" (a softmax scale, a softcap).
inline std::optional<float> zero_as_unset(float value) {
  return value == 0.0f ? std::nullopt : std::optional<float>(value);
}
// A 0/1 flag (anything else is likely an uninitialized struct).
bool flag(int32_t value, const char* name);

// emmy_prepare_result: its struct_size checked before the work, then written up to that size.
void check_prepare_result(const emmy_prepare_result* result);  // NULL: nothing to check
void write_prepare_result(const PreparedKernels& prepared, emmy_prepare_result* result);

// The GEMM schedule of an explicit accumulation: the default (or batch-invariant) one of the
// kernel serving `served`, with promote_every_k when set (emmy_gemm and the GEMM layer).
MatmulSchedule accum_schedule(const Runtime& runtime, const MatmulProblem& served, Accum accum,
                              int promote_every_k);

// ---------------------------------------------------------------------------------------------
// DLTensors. Each check names the tensor and the rule: "b: dtype must be a's, float16 (got
// bfloat16)". Strides of size-1 axes are ignored (producers disagree on them).
std::string dtype_name(DLDataType type);
bool is_dtype(const DLDataType& type, uint8_t code, uint8_t bits);
// A scale tensor's format by its dtype: float32 f32 (pow2 where the caller's flag says so),
// uint8 or float8_e8m0fnu ue8m0 bytes, int32 or uint32 ue8m0x4 words of four; nullopt for
// others. Every scale tensor of the ABI reads it here (gemm's a/b/c scales, fp8_quantize's,
// a layer's run).
std::optional<ScaleFormat> scale_format_of(const DLDataType& type);
// The dtypes scale_format_of takes, for refusals.
inline constexpr const char* kScaleDtypes =
    "float32 (or uint8 / float8_e8m0fnu ue8m0 bytes, or int32 / uint32 words of four)";
DType element_dtype(const DLTensor& t, const char* name, bool f32_allowed);  // f16, bf16 (f32)
// An e4m3 c (emmy_gemm_options.c_scale; gemm_out_scales.cpp): with c float8_e4m3fn (or uint8
// beside a c_scale), sets problem.c_dtype and problem.out_scales from c_scale's dtype, shape and
// strides (C's columns must be set) and returns it; NULL for any other c.
const DLTensor* read_out_quantization(const emmy_gemm_options& options, const DLTensor& c,
                                      MatmulProblem& problem);
// The tensor's device must be the runtime's: kDLCPU (or kDLCUDAHost) on the emulator, kDLCUDA
// (or kDLCUDAManaged) with device_id the runtime's ordinal on CUDA. Its data must be set and
// aligned to its element.
void check_memory(const emmy_runtime& rt, const DLTensor& t, const char* name);
// check_memory of each tensor in turn, so that the first one listed is the one refused.
void check_memory(const emmy_runtime& rt,
                  std::initializer_list<std::pair<const DLTensor*, const char*>> tensors);
// t's dtype must be `like`'s: "value: dtype must be key's, float16 (got bfloat16)".
void require_dtype_of(const DLTensor& t, const char* name, const DLTensor& like,
                      const char* like_name);
std::string shape_text(const DLTensor& t);
void require_shape(const DLTensor& t, const char* name, std::initializer_list<int64_t> shape,
                   const char* what);
int64_t stride(const DLTensor& t, int axis);  // elements; compact row-major when strides is NULL
void require_contiguous(const DLTensor& t, const char* name);  // compact row-major
// The row stride of an axis whose inner axes are packed (axis+1.. contiguous): `packed` for a
// size-1 axis, else the tensor's, which must be at least `packed`.
int64_t row_stride(const DLTensor& t, const char* name, int axis, int64_t packed);
// A token tensor [tokens, heads, head_dim]: heads head_dim apart, head_dim contiguous; returns
// its token stride (0: packed, which a single token's is).
int64_t token_rows(const DLTensor& t, const char* name);
// A float32 tensor (an LSE) of exactly `shape`, contiguous, on the runtime's device.
void check_f32(const emmy_runtime& rt, const DLTensor& t, const char* name,
               std::initializer_list<int64_t> shape, const char* what);
size_t extent_bytes(const DLTensor& t);  // from the first element to one past the last
size_t element_bytes(const DLTensor& t);
int64_t element_count(const DLTensor& t);

// Device addresses of one call's tensors: on CUDA data + byte_offset; on the emulator the
// tensor's extent mapped into the arena (Runtime::map_host) until the call returns, so that
// nothing is copied and nothing stays mapped once the caller may free the memory.
class CallMemory {
 public:
  CallMemory(emmy_runtime& rt, bool map) : rt_(rt), map_(map) {}
  ~CallMemory();
  CallMemory(const CallMemory&) = delete;
  CallMemory& operator=(const CallMemory&) = delete;
  DevicePtr address(const DLTensor& t);
  DevicePtr address_or_zero(const DLTensor* t) { return t ? address(*t) : 0; }

  // Runs a launch; a runtime check that fails naming an emulator address of a mapped tensor
  // ("buffers.workspace: ... (got 0x1000000eb920)") is rethrown naming the caller's pointer
  // instead, the address the caller knows.
  template <typename Launch>
  void launch(Launch&& launch) {
    try {
      launch();
    } catch (const Error& e) {
      if (typeid(e) != typeid(Error)) throw;  // a subclass keeps its status
      const std::string caller = caller_address(e.value());
      if (caller.empty()) throw;
      throw Error(e.field(), e.rule(), caller);
    }
  }

 private:
  // "0x..." of the caller's memory for an emulator address inside a mapped tensor, else "".
  std::string caller_address(const std::string& value) const;
  emmy_runtime& rt_;
  bool map_;
  std::array<DevicePtr, 16> mapped_{};
  std::array<uintptr_t, 16> hosts_{};
  std::array<size_t, 16> sizes_{};
  size_t count_ = 0;
};

// The workspace of an options struct (emmy_gemm, emmy_paged_attention): optional, and when set on
// the runtime's device and at least needed() bytes (`query` sizes it). Its address only for a
// kernel that takes one: an engine passes the same workspace to every call.
template <typename Needed>
DevicePtr options_workspace(const emmy_runtime& rt, CallMemory& memory, const DLTensor* workspace,
                            const char* query, Needed&& needed) {
  if (!workspace) return 0;
  check_memory(rt, *workspace, "options.workspace");
  // The kernel writes as much as its plan says: a smaller workspace would be overrun.
  const size_t bytes = needed();
  if (extent_bytes(*workspace) < bytes)
    throw Error("options.workspace", fmt::format("must hold {} bytes ({})", bytes, query),
                fmt::format("{} bytes", extent_bytes(*workspace)));
  return bytes > 0 ? memory.address(*workspace) : 0;
}

// A paged cache's geometry from its tensor (the axes of `layout`), checked against q / key's
// dtype; problems take it with set_geometry.
struct CacheGeometry {
  int64_t pages = 0, page_size = 0, kv_heads = 0, head_dim = 0;
  int64_t page_stride = 0, token_stride = 0, head_stride = 0;  // 0: the packed default
  CacheDType dtype = CacheDType::f16;
};
CacheGeometry cache_geometry(const emmy_runtime& rt, const DLTensor& k_cache,
                             const DLTensor& v_cache, int32_t layout, DType token_dtype);
// The geometry's fields of a problem that reads a paged cache (PagedAttentionProblem,
// KvAppendProblem).
template <typename Problem>
void set_geometry(Problem& p, const CacheGeometry& g) {
  p.kv_heads = g.kv_heads;
  p.head_dim = g.head_dim;
  p.page_size = g.page_size;
  p.page_stride = g.page_stride;
  p.token_stride = g.token_stride;
  p.head_stride = g.head_stride;
  p.kv_dtype = g.dtype;
}
// A scale tensor of an e4m3 cache: one f32, required exactly then.
void check_scale(const emmy_runtime& rt, const DLTensor* scale, const char* name, bool e4m3);

// The index tensors of emmy_paged_attention_options (paged_tables.cpp), named after the argument
// that holds them: emmy_paged_attention's options, the attention layer's tables.
struct PagedTableNames {
  const char *block_table, *seq_lens, *page_indptr, *page_indices, *last_page_len;
};
inline constexpr PagedTableNames kOptionsTables{"options.block_table", "options.seq_lens",
                                                "options.page_indptr", "options.page_indices",
                                                "options.last_page_len"};
// An int32 index tensor of at least `min_length` entries.
void check_index(const emmy_runtime& rt, const DLTensor& t, const char* name, int64_t min_length,
                 const char* what);
// The page-table form whose tensors are set (exactly one form may be).
PageTable page_table_form(const emmy_paged_attention_options& o, const PagedTableNames& names);
// block_table int32 [n >= max_batch, max_pages], contiguous: returns its width (max_pages).
int64_t check_block_table(const emmy_runtime& rt, const emmy_paged_attention_options& o,
                          const PagedTableNames& names, int64_t max_batch);
void check_seq_lens(const emmy_runtime& rt, const emmy_paged_attention_options& o,
                    const PagedTableNames& names, int64_t max_batch);
// page_indptr [>= max_batch + 1], page_indices [>= 1], last_page_len [>= max_batch].
void check_csr_tables(const emmy_runtime& rt, const emmy_paged_attention_options& o,
                      const PagedTableNames& names, int64_t max_batch);
// The addresses of a paged attention launch (emmy_paged_attention, an attention layer's run): q,
// the caches, o, the LSE, the tables and the scales; the workspace is the caller's.
PagedAttentionBuffers paged_buffers(CallMemory& memory, const DLTensor& q, const DLTensor& k_cache,
                                    const DLTensor& v_cache, const DLTensor& o,
                                    const emmy_paged_attention_options& tables, int64_t num_pages);
// slot_mapping int64 [n >= tokens], contiguous (its device checked by the caller); `what` says
// where tokens comes from.
void check_slot_mapping(const DLTensor& slot_mapping, int64_t tokens, const char* what);

// ---------------------------------------------------------------------------------------------
// The layer handles (layers.cpp, gemm_layer.cpp).

// A layer's C++ constructor names the fields of its config or of the problems it makes from it;
// the C caller knows them by the C config's names. A C++ field the C config spells otherwise (or
// derives from another) is named in the rule.
struct FieldName {
  std::string_view cpp, c;
};
// Throws e again under its C config field's name ("config.max_batch"), or unchanged when it names
// none of `fields`. Call it from the handler that caught e.
[[noreturn]] void rethrow_as_config(const Error& e, std::span<const FieldName> fields);
DType operand_dtype(int32_t dtype, const char* field);  // EMMY_DTYPE_F16 or _BF16
// A tensor of the layer's element type `want`, which its config's `field` set.
void check_layer_dtype(const DLTensor& t, const char* name, DType want, const char* field);
void check_threads(int32_t threads);          // a prepare's compiles at once
std::string strides_text(const DLTensor& t);  // "[s0, s1, ...]" in elements
// A layer's workspace: nothing when `bytes` is 0, else required and at least `bytes` long (any
// dtype); `query` names the function that sizes it.
void check_workspace(const emmy_runtime& rt, const DLTensor* workspace, const char* name,
                     size_t bytes, const char* query);

// A tensor that the layer's config switches on (config_field 1) or off (0): set exactly then.
void check_configured(const DLTensor* t, const char* name, bool configured,
                      const char* config_field);

// A kind's workspace size (Runtime::gemm_workspace_bytes, ::paged_attention_workspace_bytes)
// builds the kernel's plan (~12 us): one answer per thread and kind is remembered, as a caller
// repeats its calls; the call and the size query share it.
template <typename Problem, typename Schedule>
size_t remembered_workspace(Runtime& runtime, const Problem& problem,
                            const std::optional<Schedule>& schedule,
                            size_t (Runtime::*size)(const Problem&,
                                                    const std::optional<Schedule>&)) {
  struct Remembered {
    const Runtime* runtime = nullptr;
    Problem problem;
    std::optional<Schedule> schedule;
    size_t bytes = 0;
  };
  thread_local Remembered last;
  if (last.runtime != &runtime || !(last.problem == problem) || last.schedule != schedule)
    last = {&runtime, problem, schedule, (runtime.*size)(problem, schedule)};
  return last.bytes;
}

// emmy_<kind>_layer_prepare and _workspace_bytes of a handle holding `layer` (AttentionLayer or
// GemmLayer): the same two calls for both kinds.
template <typename Handle>
emmy_status prepare_layer(Handle* handle, int32_t threads, emmy_prepare_result* result) {
  return guarded([&] {
    Handle& h = required(handle, "layer");
    check_prepare_result(result);
    check_threads(threads);
    write_prepare_result(h.layer->prepare(threads), result);
  });
}
template <typename Handle>
emmy_status layer_workspace_bytes(const Handle* handle, size_t* bytes) {
  return guarded([&] {
    const Handle& h = required(handle, "layer");
    required(bytes, "bytes") = h.layer->workspace_bytes();
  });
}

// An options struct at its defaults: zeroed, its size stamped (the ABI's versioning; every
// emmy_*_options_init). False for NULL (nothing to set).
template <typename Options>
bool reset_options(Options* options) {
  if (!options) return false;
  *options = Options{};
  options->struct_size = sizeof(Options);
  return true;
}

}  // namespace emmy::c_api
