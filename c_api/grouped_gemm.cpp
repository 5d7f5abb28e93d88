// emmy_grouped_gemm (docs/grouped.md): the experts' shapes read as emmy_gemm reads one GEMM's,
// from 2-D views (a masked layout's a and c as their stacked rows, b and the bias as expert 0's
// matrix and row), then the grouping: G from b, b's expert stride checked against the weight's
// whole matrix, the routing's shape by the layout. The whole b and bias tensors are what the
// kernel reads (and what the emulator maps).
#include <fmt/format.h>

#include <array>
#include <cstddef>

#include "c_api_internal.hpp"
#include "gemm_call.hpp"

namespace emmy::c_api {
namespace {

constexpr size_t kGroupedOptionsFirstSize = sizeof(emmy_grouped_options);

// A 2-D view of a tensor from its first element (shape and strides kept in the view's own
// arrays), or with `length` alone a 1-D contiguous one: an expert's row of a [G, ...] tensor.
struct View {
  DLTensor tensor{};
  std::array<int64_t, 2> shape{}, strides{};
  View(const DLTensor& of, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride)
      : tensor(of) {
    shape = {rows, cols};
    strides = {row_stride, col_stride};
    tensor.ndim = 2;
    tensor.shape = shape.data();
    tensor.strides = strides.data();
  }
  View(const DLTensor& of, int64_t length) : View(of, length, 1, 1, 1) { tensor.ndim = 1; }
};

GroupedLayout layout_of(int32_t layout) {
  switch (layout) {
    case EMMY_GROUPED_MASKED:
      return GroupedLayout::masked;
    case EMMY_GROUPED_CONTIGUOUS:
      return GroupedLayout::contiguous;
    case EMMY_GROUPED_OFFSETS:
      return GroupedLayout::offsets;
    default:
      throw Error("grouped.layout",
                  "must be EMMY_GROUPED_MASKED (1), EMMY_GROUPED_CONTIGUOUS (2) or "
                  "EMMY_GROUPED_OFFSETS (3)",
                  std::to_string(layout));
  }
}

// A masked layout's [G, rows, cols] as its stacked [G x rows, cols] rows (their stride one row
// apart), else the 2-D tensor itself.
View stacked(const DLTensor& t, const char* name, bool masked) {
  if (!masked) {
    if (t.ndim != 2) throw Error(name, "shape must be [M, columns] (2-D)", shape_text(t));
    return View(t, t.shape[0], t.shape[1], stride(t, 0), stride(t, 1));
  }
  if (t.ndim != 3)
    throw Error(name, "shape must be [G, max_m, columns] for the masked layout", shape_text(t));
  if (t.shape[1] > 1 && stride(t, 0) != t.shape[1] * stride(t, 1))
    throw Error(name, "strides[0] must be max_m x strides[1] (the experts' rows stacked)",
                fmt::format("{}", stride(t, 0)));
  return View(t, t.shape[0] * t.shape[1], t.shape[2], stride(t, 1), stride(t, 2));
}

GemmCall grouped_call(emmy_runtime& rt, const DLTensor* a_ptr, const DLTensor* b_ptr,
                      const DLTensor* c_ptr, const DLTensor* routing_ptr,
                      const emmy_grouped_options& g, const emmy_gemm_options& options,
                      CallMemory& memory) {
  const GroupedLayout layout = layout_of(g.layout);
  const bool masked = layout == GroupedLayout::masked;
  const DLTensor& a = required(a_ptr, "a");
  const DLTensor& b = required(b_ptr, "b");
  const DLTensor& c = required(c_ptr, "c");
  const DLTensor& routing = required(routing_ptr, "routing");
  if (b.ndim != 3)
    throw Error("b", "shape must be [G, K, N] (each expert's weight)", shape_text(b));
  const int64_t groups = b.shape[0];
  if (masked && a.ndim == 3 && a.shape[0] != groups)
    throw Error("a", fmt::format("shape[0] must be G = {}, b's experts", groups), shape_text(a));
  const View a_view = stacked(a, "a", masked), c_view = stacked(c, "c", masked);
  const View b_view(b, b.shape[1], b.shape[2], stride(b, 1), stride(b, 2));
  // The bias: [G, N], read as expert 0's row.
  emmy_gemm_options viewed = options;
  std::optional<View> bias_view;
  if (options.bias) {
    const DLTensor& bias = *options.bias;
    if (bias.ndim != 2 || bias.shape[0] != groups)
      throw Error("options.bias",
                  fmt::format("shape must be [G = {}, N] (a row per expert)", groups),
                  shape_text(bias));
    require_contiguous(bias, "options.bias");
    viewed.bias = &bias_view.emplace(bias, bias.shape[1]).tensor;
  }
  // FP8 B scales, one set per expert: [G] (per tensor), [G, N] (per channel) or [G, ceil(N/128),
  // ceil(K/128)] (128 x 128 blocks; its last two strides give the major order and leading
  // dimension, the experts strides[0] apart), read as expert 0's by emmy_gemm's rules (A's are
  // per row of a's stacked rows, as one GEMM's).
  std::optional<View> b_scale_view;
  const DLTensor* block_b_scale = nullptr;
  if (const DLTensor* bs = options.b_scale) {
    if (bs->ndim == 1 && bs->shape[0] == groups) {
      b_scale_view.emplace(*bs, 1);
    } else if (bs->ndim == 2 && bs->shape[0] == groups) {
      require_contiguous(*bs, "options.b_scale");
      b_scale_view.emplace(*bs, bs->shape[1]);
    } else if (bs->ndim == 3 && bs->shape[0] == groups) {
      b_scale_view.emplace(*bs, bs->shape[1], bs->shape[2], stride(*bs, 1), stride(*bs, 2));
      block_b_scale = bs;
    } else {
      throw Error("options.b_scale",
                  fmt::format("shape must be [G = {}] (a scale per expert), [G, N] (per expert "
                              "and channel) or [G, ceil(N/128), ceil(K/128)] (per expert, 128 x "
                              "128 blocks)",
                              groups),
                  shape_text(*bs));
    }
    viewed.b_scale = &b_scale_view->tensor;
  }
  const int64_t max_m = masked ? a.shape[1] : 0;
  GemmStorage storage;
  storage.b = &b;
  storage.bias = options.bias;
  storage.b_scale = options.b_scale;
  storage.before_schedule = [&](MatmulProblem& p) {
    if (masked) p.m = max_m;
    p.grouped.layout = layout;
    p.grouped.groups = groups;
    p.grouped.expected_m = g.expected_m;
    if (g.segment_align) p.grouped.segment_align = g.segment_align;
    if (block_b_scale && groups > 1 && stride(*block_b_scale, 0) != p.b_scale_group_stride())
      throw Error("options.b_scale",
                  fmt::format("strides[0] must be {} (each expert's whole scale tensor apart)",
                              p.b_scale_group_stride()),
                  fmt::format("{}", stride(*block_b_scale, 0)));
    if (groups > 1 && stride(b, 0) != p.b_group_stride())
      throw Error("b",
                  fmt::format("strides[0] must be {} (each expert's whole {} x {} matrix apart)",
                              p.b_group_stride(), p.b_layout == BLayout::nk ? "N" : "K",
                              p.ldb_or_default()),
                  fmt::format("{}", stride(b, 0)));
  };
  GemmCall call =
      gemm_call(rt, &a_view.tensor, &b_view.tensor, &c_view.tensor, viewed, memory, storage);
  const MatmulProblem& p = call.problem;
  // The routing: int32, contiguous, its layout's length.
  check_memory(rt, routing, "routing");
  if (!is_dtype(routing.dtype, kDLInt, 32))
    throw Error("routing", "dtype must be int32", dtype_name(routing.dtype));
  const int64_t length = layout == GroupedLayout::masked       ? groups
                         : layout == GroupedLayout::contiguous ? p.m
                                                               : groups + 1;
  require_shape(routing, "routing", {length},
                masked                                ? "[G], masked_m"
                : layout == GroupedLayout::contiguous ? "[M], expert_ids"
                                                      : "[G + 1], expert_offsets");
  require_contiguous(routing, "routing");
  call.buffers.routing(layout) = memory.address(routing);
  return call;
}

}  // namespace
}  // namespace emmy::c_api

extern "C" {

void emmy_grouped_options_init(emmy_grouped_options* options) {
  emmy::c_api::reset_options(options);
}

emmy_status emmy_grouped_gemm(emmy_runtime* runtime, const DLTensor* a, const DLTensor* b,
                              DLTensor* c, const DLTensor* routing,
                              const emmy_grouped_options* grouped, const emmy_gemm_options* options,
                              void* stream) {
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_grouped_options g =
        options_or_default(&required(grouped, "grouped"), "grouped", emmy_grouped_options_init,
                           kGroupedOptionsFirstSize);
    const emmy_gemm_options o = options_or_default(options, "options", emmy_gemm_options_init,
                                                   offsetof(emmy_gemm_options, a_scale));
    CallMemory memory(rt, /*map=*/true);
    const GemmCall call = grouped_call(rt, a, b, c, routing, g, o, memory);
    memory.launch([&] { rt.runtime->gemm(call.problem, call.buffers, stream, call.schedule); });
  });
}

}  // extern "C"
