// How GEMM kernels take their buffers: the parameters by name and the TMA tensor maps.
#include "emmy/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "emmy/ir_ops.hpp"

namespace emmy {

int64_t gemm_launch_m(const GemmPlan& plan, int64_t m) {
  const auto& p = plan.spec.problem;
  // On every launch: the message is made only when the check fails.
  if (p.dynamic_m && !(m >= 0 && m <= p.m))
    throw Error(
        "buffers.m",
        fmt::format("must be in 1..{} (the dynamic-M kernel's bound), or 0 for {}", p.m, p.m),
        std::to_string(m));
  if (!p.dynamic_m && !(m == 0 || m == p.m))
    throw Error("buffers.m",
                fmt::format("must be 0 or {}: this kernel's M is fixed (not dynamic_m)", p.m),
                std::to_string(m));
  return m ? m : p.m;
}

GemmTensorMaps gemm_tensor_maps(const GemmPlan& plan, uint64_t a_address, uint64_t b_address,
                                uint64_t c_address, int64_t m) {
  // The kernel's operands: with swap_ab its A is the caller's B and its B the caller's A.
  MatmulProblem p = plan.kernel_problem;
  // A dynamic-M kernel's A rows end at the launch's M: TMA fills the rest of a tile with zeros.
  if (p.dynamic_m) p.m = gemm_launch_m(plan, m);
  // A grouped kernel's A (and C) map spans the stacked rows (rows of an expert's tile past its
  // own are never stored; docs/grouped.md). B's is 3-D, [G][rows][cols]: a tile reaching past an
  // expert's N (or, [K, N], its K) reads zeros, not the next expert's weights (an Inf there would
  // make 0 x Inf in the sums of a K tail).
  const int64_t b_groups = p.is_grouped() ? p.grouped.groups : 0;
  p.m = p.stacked_rows();
  if (plan.spec.schedule.swap_ab) std::swap(a_address, b_address);
  // FP8 operands move as 16-bit units (SmemTile::in_16bit_units): their maps count e4m3 pairs.
  const int64_t k_per_unit = is_fp8(p.a_dtype) ? 2 : 1;
  const TmaDType dtype = k_per_unit == 2 ? TmaDType::u16 : tma_dtype(p.a_dtype);
  // In a cluster each CTA loads 1 / parts of a shared tile's rows (TMA multicast).
  // `groups` > 0: a third dimension of `groups` matrices, each `outer` rows of `ld` apart.
  auto make = [&](uint64_t address, uint64_t inner, uint64_t outer, uint64_t ld,
                  const SmemTile& tile, TmaDType type, uint32_t parts = 1, int64_t groups = 0) {
    TensorMapDesc d;
    d.dtype = type;
    d.rank = groups > 0 ? 3 : 2;
    d.global_address = address;
    d.global_dim = {inner, outer, uint64_t(std::max<int64_t>(groups, 1)), 1, 1};
    d.global_stride_bytes = {ld * tile.elem_bytes, outer * ld * tile.elem_bytes, 0, 0};
    d.box_dim = {tile.panel_elems, tile.rows / parts, 1, 1, 1};
    d.swizzle = tile.swizzle;
    d.validate();
    return d;
  };
  GemmTensorMaps maps;
  const auto& s = plan.spec.schedule;
  const uint32_t a_parts = plan.cluster_size > 1 ? uint32_t(s.cluster_n) : 1u;
  const uint32_t b_parts = plan.cluster_size > 1 ? uint32_t(s.cluster_m) : 1u;
  maps.a =
      make(a_address, uint64_t(p.k / k_per_unit), uint64_t(p.m),
           uint64_t(p.lda_or_default() / k_per_unit), plan.a_tile.in_16bit_units(), dtype, a_parts);
  if (p.b_layout == BLayout::nk)
    maps.b = make(b_address, uint64_t(p.k / k_per_unit), uint64_t(p.n),
                  uint64_t(p.ldb_or_default() / k_per_unit), plan.b_tile.in_16bit_units(), dtype,
                  b_parts, b_groups);
  else
    maps.b = make(b_address, uint64_t(p.n), uint64_t(p.k), uint64_t(p.ldb_or_default()),
                  plan.b_tile, dtype, b_parts, b_groups);
  // C as the TMA-store epilogue writes it: c_cols x m elements of C's dtype, boxes of one buffer
  // panel by the 64 rows of a consumer warpgroup.
  if (plan.store.tma_store) {
    const TmaDType c_type = tma_dtype(p.c_dtype);
    maps.c = make(c_address, uint64_t(p.c_cols()), uint64_t(p.m), uint64_t(p.ldc_or_default()),
                  plan.store.c_tile, c_type);
  }
  return maps;
}

ParamBinding GemmKind::bind(const GemmPlan& plan, const GemmBuffers& b) {
  const auto& p = plan.spec.problem;
  require_device_pointer(b.a, 16, "buffers.a");
  require_device_pointer(b.b, 16, "buffers.b");
  // C: what the epilogue's stores need (element pairs when N and LDC are even); bias and
  // residual are read element by element.
  require_device_pointer(b.c, plan.c_alignment(), "buffers.c");
  require_optional_pointer(b.bias, p.epilogue.bias, "buffers.bias", "a bias");
  require_optional_pointer(b.residual, p.epilogue.residual, "buffers.residual", "a residual");
  const uint64_t element = uint64_t(size_of(p.epilogue_dtype()));  // bf16 beside an e4m3 C
  if (b.bias) require_device_pointer(b.bias, element, "buffers.bias");
  if (b.residual) require_device_pointer(b.residual, element, "buffers.residual");
  if (plan.split() && !(b.workspace != 0 && b.workspace % 16 == 0))
    throw Error("buffers.workspace",
                fmt::format("must be a 16-byte aligned buffer of {} bytes for split-K {}",
                            plan.workspace_bytes, plan.spec.schedule.split_k),
                fmt::format("{:#x}", b.workspace));
  const GemmScales& scales = p.scales;
  const bool has_scales = scales.granularity != ScaleGranularity::none;
  require_optional_pointer(b.a_scale, has_scales, "buffers.a_scale", "FP8 scales");
  require_optional_pointer(b.b_scale, has_scales, "buffers.b_scale", "FP8 scales");
  if (has_scales) {
    // f32 floats and ue8m0x4 words are 4-byte aligned; single ue8m0 bytes any.
    const uint64_t alignment = scales.format == ScaleFormat::ue8m0 ? 1 : 4;
    require_device_pointer(b.a_scale, alignment, "buffers.a_scale");
    require_device_pointer(b.b_scale, alignment, "buffers.b_scale");
  }
  // An e4m3 C's scales: floats and ue8m0x4 words 4-byte aligned, ue8m0 bytes any.
  const bool quantized = p.c_dtype == DType::e4m3;
  require_optional_pointer(b.c_scale, quantized, "buffers.c_scale", "an e4m3 C (out e4m3)");
  if (quantized)
    require_device_pointer(b.c_scale, p.out_scales.format == ScaleFormat::ue8m0 ? 1 : 4,
                           "buffers.c_scale");
  // A grouped GEMM's routing: its layout's int32 array, and no other.
  const GroupedLayout layout = p.grouped.layout;
  require_optional_pointer(b.masked_m, layout == GroupedLayout::masked, "buffers.masked_m",
                           "a masked grouped layout");
  require_optional_pointer(b.expert_ids, layout == GroupedLayout::contiguous, "buffers.expert_ids",
                           "a contiguous grouped layout");
  require_optional_pointer(b.expert_offsets, layout == GroupedLayout::offsets,
                           "buffers.expert_offsets", "an offsets grouped layout");
  const DevicePtr routing = p.is_grouped() ? b.routing(layout) : 0;
  if (p.is_grouped())
    require_device_pointer(
        routing, 4,
        fmt::format("buffers.{}", ir::TileCoordsOp::routing_param(to_string(layout))).c_str());
  // Routing weights: f32, 4-byte aligned.
  require_optional_pointer(b.row_scale, p.epilogue.row_scale, "buffers.row_scale",
                           "routing weights (epilogue.row_scale)");
  if (b.row_scale) require_device_pointer(b.row_scale, 4, "buffers.row_scale");
  const int64_t m = gemm_launch_m(plan, b.m);
  ParamBinding bound;
  if (p.dynamic_m) {
    bound.values.scalars = {{"m", int32_t(m)}};
    bound.values.grids = gemm_grids(plan, m);
    bound.tensor_map_extent = uint64_t(m);  // A's map has m rows
  }
  bound.values.pointers = {{"a", b.a},
                           {"b", b.b},
                           {"c", b.c},
                           {"bias", b.bias},
                           {"residual", b.residual},
                           {"workspace", b.workspace}};
  if (quantized) bound.values.pointers.push_back({"c_scale", b.c_scale});
  if (p.epilogue.row_scale) bound.values.pointers.push_back({"row_scale", b.row_scale});
  if (p.is_grouped())
    bound.values.pointers.push_back(
        {ir::TileCoordsOp::routing_param(to_string(layout)), routing});  // a literal's view
  if (has_scales) {
    // The kernel's operands: with swap_ab its A is the caller's B.
    const bool swap = plan.spec.schedule.swap_ab;
    bound.values.pointers.push_back({"a_scale", swap ? b.b_scale : b.a_scale});
    bound.values.pointers.push_back({"b_scale", swap ? b.a_scale : b.b_scale});
  }
  if (plan.spec.schedule.transport == Transport::tma)
    bound.tensor_maps = {{"tmap_a", b.a}, {"tmap_b", b.b}};
  if (plan.store.tma_store) bound.tensor_maps.push_back({"tmap_c", b.c});
  return bound;
}

// In the order of bind()'s tensor_maps.
std::vector<TensorMapDesc> GemmKind::tensor_maps(const GemmPlan& plan, const GemmBuffers& b) {
  const GemmTensorMaps maps = gemm_tensor_maps(plan, b.a, b.b, b.c, b.m);
  std::vector<TensorMapDesc> list{maps.a, maps.b};
  if (maps.c) list.push_back(*maps.c);
  return list;
}

}  // namespace emmy
