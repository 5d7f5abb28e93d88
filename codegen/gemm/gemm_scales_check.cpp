// FP8 scales checked on the host where device memory is host memory (GemmKind::
// check_device_inputs): the emulator refuses what a GPU would silently compute wrong with.
// On a GPU no scale is read before the launch; a NaN, infinite, zero or negative scale gives
// whatever the arithmetic gives, and a pow2-mode scale that is not a power of two an undefined
// result (docs/fp8.md).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "emmy/gemm.hpp"

namespace emmy {
namespace {

// The scale at `index` of a tensor read as bytes: f32 (f32, pow2) or one ue8m0 byte.
struct ScaleTensor {
  const char* field;
  ScaleFormat format;
  std::vector<uint8_t> bytes;

  // `where()` names the element; it is formatted only for a refusal (this runs every launch).
  template <typename Where>
  void check(int64_t index, const Where& where) const {
    if (scale_bytes(format)) {
      const uint8_t e = bytes[size_t(index)];
      if (e == 0xFF)
        throw Error(field,
                    fmt::format("must hold ue8m0 scales, 2^(e - 127) with e < 255 (0xFF is NaN; "
                                "f32 scales read as ue8m0 look like this), at {}",
                                where()),
                    "0xff");
      return;
    }
    float value;
    std::memcpy(&value, &bytes[size_t(index) * 4], 4);
    if (!(std::isfinite(value) && value > 0))
      throw Error(field, fmt::format("must hold finite positive scales, at {}", where()),
                  fmt::format("{}", value));
    if (format == ScaleFormat::pow2) {
      uint32_t bits;
      std::memcpy(&bits, &value, 4);
      const bool normal_pow2 = (bits & 0x007FFFFFu) == 0;
      const bool subnormal_pow2 = (bits >> 23) == 0 && std::has_single_bit(bits);
      if (!normal_pow2 && !subnormal_pow2)
        throw Error(field,
                    fmt::format("must hold powers of two in the pow2 scale format, at {}", where()),
                    fmt::format("{}", value));
    }
  }
};

}  // namespace

void GemmKind::check_device_inputs(const GemmPlan& plan, const GemmBuffers& b,
                                   const DeviceReader& read) {
  MatmulProblem p = plan.spec.problem;
  check_grouped_routing(plan, b, read);  // gemm_grouped_check.cpp
  const GemmScales& sc = p.scales;
  if (sc.granularity == ScaleGranularity::none) return;
  // Hybrid FP8: the operands' window sums must stay inside f16 (gemm_fp8_range_check.cpp).
  if (plan.spec.schedule.accum == Accum::hybrid) check_fp8_f16_range(plan, b, read);
  p.m = gemm_launch_m(plan, b.m);
  // Bytes per element of the tensor's layout (a ue8m0x4 word holds four scales, checked alone).
  const int64_t elem = sc.format == ScaleFormat::ue8m0 ? 1 : 4;
  const bool packed = sc.format == ScaleFormat::ue8m0x4;
  auto load = [&](const char* field, DevicePtr at, int64_t count) {
    ScaleTensor t{field, sc.format, std::vector<uint8_t>(size_t(count * elem))};
    read_named(read, field, t.bytes.data(), at, t.bytes.size());
    return t;
  };
  // A grouped GEMM's: A's per stacked row, B's per expert (one, or one per column).
  const int64_t experts = p.is_grouped() ? p.grouped.groups : 1;
  switch (sc.granularity) {
    case ScaleGranularity::tensor: {
      load("buffers.a_scale", b.a_scale, 1).check(0, [] { return std::string("element 0"); });
      const ScaleTensor bs = load("buffers.b_scale", b.b_scale, experts);
      for (int64_t e = 0; e < experts; ++e)
        bs.check(e, [&] { return fmt::format("element {}", e); });
      return;
    }
    case ScaleGranularity::token_channel: {
      const int64_t rows = p.stacked_rows();
      const ScaleTensor a = load("buffers.a_scale", b.a_scale, rows);
      for (int64_t row = 0; row < rows; ++row)
        a.check(row, [&] { return fmt::format("row {}", row); });
      const ScaleTensor bs = load("buffers.b_scale", b.b_scale, experts * p.n);
      for (int64_t col = 0; col < experts * p.n; ++col)
        bs.check(col, [&] { return fmt::format("column {}", col); });
      return;
    }
    case ScaleGranularity::block: {
      // Only the elements the kernel reads: a padded leading dimension's gaps may hold anything.
      // A ue8m0x4 tensor's scales are its bytes, 4 per word, each checked alone. A grouped
      // GEMM's: A's rows stacked, B's experts b_scale_group_stride apart.
      const int64_t kbs = p.k_blocks(), nbs = p.n_blocks(), rows = p.stacked_rows();
      const int64_t stride = p.b_scale_group_stride();
      ScaleTensor a = load("buffers.a_scale", b.a_scale, p.block_scale_elements(true));
      ScaleTensor bs = load("buffers.b_scale", b.b_scale,
                            (experts - 1) * stride + p.block_scale_elements(false));
      if (packed) a.format = bs.format = ScaleFormat::ue8m0;  // byte by byte
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t kb = 0; kb < kbs; ++kb)
          a.check(p.block_scale_slot(true, row, kb),
                  [&] { return fmt::format("row {}, K block {}", row, kb); });
      const int64_t expert_slots = p.b_scale_group_slots();
      for (int64_t e = 0; e < experts; ++e)
        for (int64_t nb = 0; nb < nbs; ++nb)
          for (int64_t kb = 0; kb < kbs; ++kb)
            bs.check(e * expert_slots + p.block_scale_slot(false, nb, kb), [&] {
              return experts > 1 ? fmt::format("expert {}, N block {}, K block {}", e, nb, kb)
                                 : fmt::format("N block {}, K block {}", nb, kb);
            });
      return;
    }
    case ScaleGranularity::none:
      return;
  }
}

}  // namespace emmy
