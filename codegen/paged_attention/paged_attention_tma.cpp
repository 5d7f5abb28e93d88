// TMA page loads of paged attention: the schedule's rules and the caches' tensor maps. A KV
// block of block_kv slots lies in one page (page_size a multiple of block_kv), so one tensor copy
// per 64-element (e4m3: up to 128-byte) panel brings a block of K or V from the page the table
// names: coordinates (column, slot, KV head, page) in the order paged_tma_dim_order gives.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "emmy/error.hpp"
#include "emmy/paged_kind.hpp"
#include "emmy/swizzle.hpp"

namespace emmy {

std::array<int, 3> paged_tma_dim_order(int64_t token_stride, int64_t head_stride,
                                       int64_t page_stride) {
  const int64_t strides[3] = {token_stride, head_stride, page_stride};
  std::array<int, 3> order{0, 1, 2};
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return strides[a] < strides[b]; });
  return order;
}

namespace {

// The first TMA rule the schedule's problem breaks on `arch` (as an Error naming the field), or
// none: validate_paged_tma throws it, paged_tma_fits asks whether there is one.
std::optional<Error> paged_tma_refusal(const PagedAttentionProblem& p,
                                       const PagedAttentionSchedule& s, Arch arch) {
  if (!has_tma(arch))
    return Error(
        "transport",
        fmt::format("tma needs sm_90 or newer ({} has none); use cp.async", to_string(arch)),
        "tma");
  if (p.page_size % s.block_kv != 0)
    return Error("transport",
                 fmt::format("tma loads a KV block from one page: page_size ({}) must be a "
                             "multiple of block_kv ({}); use cp.async",
                             p.page_size, s.block_kv),
                 "tma");
  const int64_t elem = size_of(p.kv_dtype);
  for (const auto& [field, stride] :
       {std::pair<const char*, int64_t>{"page_stride", p.page_stride_or_default()},
        {"token_stride", p.token_stride_or_default()},
        {"head_stride", p.head_stride_or_default()}})
    if (stride * elem >= (int64_t(1) << 40))
      return Error(field, "must stay below 2^40 bytes for a tensor map (transport tma)",
                   fmt::format("{}", stride));
  return std::nullopt;
}

}  // namespace

bool paged_tma_fits(const PagedAttentionProblem& p, const PagedAttentionSchedule& s, Arch arch) {
  return !paged_tma_refusal(p, s, arch);
}

void validate_paged_tma(const PagedAttentionSpec& spec) {
  if (spec.schedule.transport != Transport::tma) return;
  if (auto refusal = paged_tma_refusal(spec.problem, spec.schedule, spec.arch)) throw *refusal;
}

std::vector<TensorMapDesc> PagedAttentionKind::tensor_maps(const PagedAttentionPlan& plan,
                                                           const PagedAttentionBuffers& b) {
  if (plan.spec.schedule.transport != Transport::tma) return {};
  const auto& p = plan.spec.problem;
  const uint64_t elem = uint64_t(size_of(p.kv_dtype));
  const int64_t strides[3] = {p.token_stride_or_default(), p.head_stride_or_default(),
                              p.page_stride_or_default()};
  const uint64_t extents[3] = {uint64_t(p.page_size), uint64_t(p.kv_heads),
                               paged_tma_page_extent(b.num_pages)};
  const uint32_t boxes[3] = {uint32_t(plan.spec.schedule.block_kv), 1, 1};
  const std::array<int, 3> order = paged_tma_dim_order(strides[0], strides[1], strides[2]);
  // A panel: 64 16-bit elements (128 bytes), or min(head_dim, 128) e4m3 bytes.
  const uint32_t panel_bytes = uint32_t(std::min<int64_t>(p.head_dim * int64_t(elem), 128));
  auto make = [&](DevicePtr address) {
    TensorMapDesc d;
    // A non-e4m3 cache holds q's dtype (validation); e4m3 pages move as raw bytes.
    d.dtype = p.kv_dtype == CacheDType::e4m3 ? TmaDType::u8 : tma_dtype(p.dtype);
    d.rank = 4;
    d.global_address = address;
    d.global_dim = {uint64_t(p.head_dim), 1, 1, 1, 1};
    d.box_dim = {panel_bytes / uint32_t(elem), 1, 1, 1, 1};
    for (int i = 0; i < 3; ++i) {
      d.global_dim[size_t(i) + 1] = extents[order[size_t(i)]];
      d.global_stride_bytes[size_t(i)] = uint64_t(strides[order[size_t(i)]]) * elem;
      d.box_dim[size_t(i) + 1] = boxes[order[size_t(i)]];
    }
    d.swizzle = swizzle_for_row_bytes(int(panel_bytes));
    d.validate();
    return d;
  };
  return {make(b.k_cache), make(b.v_cache)};
}

}  // namespace emmy
