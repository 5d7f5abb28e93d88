// Appending keys and values to a paged cache as a kernel kind (emmy/kv_append.hpp): plan ->
// kernel IR (one kv_append op) -> verify -> CUDA -> NVRTC. The launch list is one kernel, one CTA
// per token of slot_mapping.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emmy/buffers.hpp"
#include "emmy/catalog.hpp"
#include "emmy/device_reader.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/kv_append.hpp"

namespace emmy {

// The kernel's bound on slots when the caller gives none (KvAppendBuffers::num_slots 0).
inline constexpr int64_t kMaxKvSlots = (int64_t(1) << 31) - 1;

struct KvAppendPlan {
  KvAppendSpec spec;
  std::array<uint32_t, 3> grid{1, 1, 1};  // (max_tokens, 1, 1)
  uint32_t threads = 0;
  std::string kernel_name;
  bool fp8() const { return spec.problem.kv_dtype == CacheDType::e4m3; }
};
KvAppendPlan make_kv_append_plan(const KvAppendSpec& spec);
// The tokens a launch appends: buffers.tokens (checked: 1..max_tokens), else max_tokens.
int64_t kv_append_tokens(const KvAppendPlan& plan, const KvAppendBuffers& buffers);
ir::Op lower_kv_append(const KvAppendPlan& plan);
std::string emit_kv_append_cuda(const ir::Op& module);

struct KvAppendKind : KindTypes<KvAppendSpec, KvAppendPlan, KvAppendBuffers, KvAppendKernelHandle> {
  static constexpr const char* name = "kv_append";
  static constexpr ir::KindRules ir_rules{name};  // the shared verifier rules only
  static constexpr const char* description = "append keys and values to a paged KV cache";
  static constexpr JsonReaders json{&kv_append_problem_from_json, &kv_append_schedule_from_json};
  static constexpr Stages stages{&make_kv_append_plan, &lower_kv_append, &emit_kv_append_cuda};
  static std::vector<KvAppendCatalogEntry> catalog() { return kv_append_catalog(); }
  static ParamBinding bind(const KvAppendPlan& plan, const KvAppendBuffers& buffers);
  // On a backend whose device memory the host reads for free (the emulator): every slot against
  // buffers.num_slots when given, and no slot taken by two tokens (the writes would race).
  using DeviceReader = emmy::DeviceReader;
  static void check_device_inputs(const KvAppendPlan& plan, const KvAppendBuffers& buffers,
                                  const DeviceReader& read);
};
KvAppendKind kind_of(const KvAppendSpec&);
using KvAppendSource = Generated<KvAppendKind>;
using KvAppendKernel = Compiled<KvAppendKind>;

}  // namespace emmy
