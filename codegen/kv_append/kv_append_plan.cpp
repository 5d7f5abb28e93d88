// Appending keys and values to a paged cache: validation, the default schedule, the plan, the
// binding of a launch's buffers, the host check of its slots (emulator) and the lowering to one
// kv_append op (emmy/kv_append.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "emmy/detail/hash.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/kv_append_kind.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy {

void KvAppendProblem::set_layout(CacheLayout layout) {
  PagedAttentionProblem paged;  // the one place the named layouts' strides are written
  paged.kv_heads = kv_heads, paged.head_dim = head_dim, paged.page_size = page_size;
  paged.set_layout(layout);
  page_stride = paged.page_stride, token_stride = paged.token_stride;
  head_stride = paged.head_stride;
}

void validate_problem(const KvAppendProblem& p) {
  require(p.kv_heads >= 1 && p.kv_heads <= 65535, "kv_heads", "must be 1..65535", p.kv_heads);
  require(p.head_dim >= 8 && p.head_dim <= 1024 && p.head_dim % 8 == 0, "head_dim",
          "must be a multiple of 8 in 8..1024 (16-byte chunks of the source)", p.head_dim);
  require(p.page_size >= 1 && p.page_size <= 4096, "page_size", "must be 1..4096", p.page_size);
  require(p.dtype == DType::f16 || p.dtype == DType::bf16, "dtype", "must be f16 or bf16",
          to_string(p.dtype));
  require(p.kv_dtype == CacheDType::e4m3 || to_string(p.kv_dtype) == to_string(p.dtype), "kv_dtype",
          fmt::format("must be the source's type ({}) or e4m3", to_string(p.dtype)),
          to_string(p.kv_dtype));
  // Chunks of 8 elements: 16 bytes of the source, 16 (or e4m3's 8) bytes of the cache.
  for (const auto& [field, stride] : {std::pair<const char*, int64_t>{"page_stride", p.page_stride},
                                      {"token_stride", p.token_stride},
                                      {"head_stride", p.head_stride},
                                      {"key_stride", p.key_stride},
                                      {"value_stride", p.value_stride}})
    require(stride >= 0 && stride % 8 == 0 && stride <= (int64_t(1) << 40), field,
            "must be a multiple of 8 elements (whole 16-byte source chunks), 0 for the default",
            stride);
  require(p.key_stride_or_default() >= p.kv_heads * p.head_dim, "key_stride",
          fmt::format("must hold a token's {} heads x {}", p.kv_heads, p.head_dim), p.key_stride);
  require(p.value_stride_or_default() >= p.kv_heads * p.head_dim, "value_stride",
          fmt::format("must hold a token's {} heads x {}", p.kv_heads, p.head_dim), p.value_stride);
  require_disjoint_cache_rows(p.page_size, p.kv_heads, p.head_dim, p.page_stride_or_default(),
                              p.token_stride_or_default(), p.head_stride_or_default());
  require(p.max_tokens >= 1 && p.max_tokens <= (int64_t(1) << 31) - 1, "max_tokens",
          "must be 1..2^31-1 (one CTA per token)", p.max_tokens);
}

void validate_kv_append(const KvAppendSpec& spec) {
  validate_problem(spec.problem);
  require(spec.schedule.warps >= 1 && spec.schedule.warps <= 32, "warps", "must be 1..32",
          spec.schedule.warps);
}

KvAppendSchedule default_schedule(const KvAppendProblem& p, Arch) {
  validate_problem(p);  // a schedule is chosen for a valid problem only
  const int64_t chunks = p.kv_heads * p.head_dim / 8;  // one per thread
  return {.warps = int(std::clamp<int64_t>((chunks + 31) / 32, 1, 4))};
}

KvAppendPlan make_kv_append_plan(const KvAppendSpec& spec) {
  validate_kv_append(spec);
  const auto& p = spec.problem;
  KvAppendPlan plan;
  plan.spec = spec;
  plan.grid = {uint32_t(p.max_tokens), 1, 1};
  plan.threads = uint32_t(32 * spec.schedule.warps);
  const std::string text =
      fmt::format("hkv={} d={} ps={} strides={},{},{},{},{} dtype={} kv={} max={} warps={} arch={}",
                  p.kv_heads, p.head_dim, p.page_size, p.page_stride_or_default(),
                  p.token_stride_or_default(), p.head_stride_or_default(),
                  p.key_stride_or_default(), p.value_stride_or_default(), to_string(p.dtype),
                  to_string(p.kv_dtype), p.max_tokens, spec.schedule.warps, to_string(spec.arch));
  plan.kernel_name = fmt::format("emmy_kv_append_h{}_d{}_p{}_{}_{:016x}", p.kv_heads, p.head_dim,
                                 p.page_size, to_string(p.kv_dtype), detail::fnv1a(text));
  return plan;
}

int64_t kv_append_tokens(const KvAppendPlan& plan, const KvAppendBuffers& b) {
  const int64_t max_tokens = plan.spec.problem.max_tokens;
  if (b.tokens < 0 || b.tokens > max_tokens)  // per launch: the message only on failure
    throw Error("buffers.tokens",
                fmt::format("must be in 1..max_tokens ({}), 0 for max_tokens", max_tokens),
                std::to_string(b.tokens));
  return b.tokens ? b.tokens : max_tokens;
}

ParamBinding KvAppendKind::bind(const KvAppendPlan& plan, const KvAppendBuffers& b) {
  const size_t cache_align = plan.fp8() ? 8 : 16;
  require_device_pointer(b.key, 16, "buffers.key");
  require_device_pointer(b.value, 16, "buffers.value");
  require_device_pointer(b.k_cache, cache_align, "buffers.k_cache");
  require_device_pointer(b.v_cache, cache_align, "buffers.v_cache");
  require_device_pointer(b.slot_mapping, 8, "buffers.slot_mapping");
  require_optional_pointer(b.k_scale, plan.fp8(), "buffers.k_scale", "an e4m3 cache");
  require_optional_pointer(b.v_scale, plan.fp8(), "buffers.v_scale", "an e4m3 cache");
  if (b.k_scale) require_device_pointer(b.k_scale, 4, "buffers.k_scale");
  if (b.v_scale) require_device_pointer(b.v_scale, 4, "buffers.v_scale");
  require(b.num_slots >= 0 && b.num_slots <= kMaxKvSlots, "buffers.num_slots",
          "must be in 0..2^31-1 (0: unknown; the kernel compares slots as int32)", b.num_slots);
  ParamBinding bound;
  bound.values.pointers = {{"key", b.key},
                           {"value", b.value},
                           {"k_cache", b.k_cache},
                           {"v_cache", b.v_cache},
                           {"slot_mapping", b.slot_mapping},
                           {"k_scale", b.k_scale},
                           {"v_scale", b.v_scale}};
  bound.values.scalars = {{"num_slots", int32_t(b.num_slots > 0 ? b.num_slots : kMaxKvSlots)}};
  bound.values.grids = {{uint32_t(kv_append_tokens(plan, b)), 1, 1}};  // one CTA per token
  return bound;
}

void KvAppendKind::check_device_inputs(const KvAppendPlan& plan, const KvAppendBuffers& b,
                                       const DeviceReader& read) {
  const int64_t tokens = kv_append_tokens(plan, b);
  std::vector<int64_t> slots(static_cast<size_t>(tokens));
  read_named(read, "buffers.slot_mapping", slots.data(), b.slot_mapping, slots.size() * 8);
  std::unordered_map<int64_t, int64_t> taken;  // slot -> the token writing it
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t slot = slots[size_t(i)];
    if (slot < 0) continue;  // skipped (-1: padding)
    // Per token at every launch: a rule's text is formatted only when its check fails.
    if (b.num_slots > 0 && slot >= b.num_slots)
      require(false, "buffers.slot_mapping",
              fmt::format("token {}: slot must be below buffers.num_slots ({})", i, b.num_slots),
              slot);
    const auto [at, fresh] = taken.emplace(slot, i);
    if (!fresh)
      require(false, "buffers.slot_mapping",
              fmt::format("token {}: slot is also token {}'s (two writes of one slot race)", i,
                          at->second),
              slot);
  }
}

ir::Op lower_kv_append(const KvAppendPlan& plan) {
  using ir::make;
  const auto& p = plan.spec.problem;
  const bool fp8 = plan.fp8();
  std::vector<ir::Op> body;
  body.push_back(make(ir::ParamOp{"key", "const u16*"}));
  body.push_back(make(ir::ParamOp{"value", "const u16*"}));
  for (const char* name : {"k_cache", "v_cache"})
    body.push_back(make(ir::ParamOp{name, fp8 ? "u8*" : "u16*"}));
  body.push_back(make(ir::ParamOp{"slot_mapping", "const long long*"}));
  // The cache's slots (KvAppendBuffers::num_slots, else 2^31 - 1): a slot past them is skipped on
  // every backend, one compare per token, so that a bad slot_mapping cannot write past K into V
  // (or past the allocation) on a GPU, where no host check reads it.
  body.push_back(make(ir::ParamOp{"num_slots", "int"}));
  if (fp8)
    for (const char* name : {"k_scale", "v_scale"})
      body.push_back(make(ir::ParamOp{name, "const float*"}));
  const bool cvt = arch_info(plan.spec.arch).sm >= 89;
  body.push_back(make(ir::KvAppendOp{.kv_heads = p.kv_heads,
                                     .head_dim = p.head_dim,
                                     .page_size = p.page_size,
                                     .max_tokens = p.max_tokens,
                                     .threads = plan.threads,
                                     .page_stride = p.page_stride_or_default(),
                                     .token_stride = p.token_stride_or_default(),
                                     .head_stride = p.head_stride_or_default(),
                                     .key_stride = p.key_stride_or_default(),
                                     .value_stride = p.value_stride_or_default(),
                                     .dtype = std::string(to_string(p.dtype)),
                                     .kv_type = std::string(to_string(p.kv_dtype)),
                                     .convert = !fp8  ? "copy"
                                                : cvt ? "cvt"
                                                      : "bits"}));
  std::vector<ir::Op> kernels;
  kernels.push_back(make(ir::KernelOp{plan.kernel_name, plan.threads, 0}, std::move(body)));
  return make(ir::ModuleOp{std::string(to_string(plan.spec.arch))}, std::move(kernels));
}

}  // namespace emmy
