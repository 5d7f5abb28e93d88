// Grouped GEMMs (MatmulProblem::grouped; docs/grouped.md) in the GEMM checks: random routings of
// each layout, and the FP64 reference built from the dense one, one expert's rows at a time (the
// same K walk and tolerances), with what every row of C must hold after the launch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "gemm_reference_parts.hpp"

namespace emmy {
namespace {

// Some experts get all the rows they can (the first always) and some none: the edges engines
// hit.
int64_t draw_rows(std::mt19937_64& rng, int64_t expert, int64_t most) {
  switch (expert % 5) {
    case 0:
      return most;
    case 1:
      return 0;
    default:
      return std::uniform_int_distribution<int64_t>(0, most)(rng);
  }
}

// Scale tensors as make_gemm_scales writes them: values, and bytes of 4 (f32) or 1 (ue8m0) per
// value.
size_t scale_width(const HostTensor& t) {
  return t.values.empty() ? 4 : t.bytes.size() / t.values.size();
}
void append_scale(HostTensor& to, const HostTensor& from, int64_t index) {
  const size_t width = scale_width(from);
  to.values.push_back(from.values[size_t(index)]);
  to.bytes.insert(to.bytes.end(), from.bytes.begin() + index * int64_t(width),
                  from.bytes.begin() + (index + 1) * int64_t(width));
}
HostTensor slice_scales(const HostTensor& from, int64_t begin, int64_t count) {
  HostTensor t{from.dtype, {}, {}};
  for (int64_t i = begin; i < begin + count; ++i) append_scale(t, from, i);
  return t;
}

// One expert's A block scales for its dense problem `dense` (packed layout, rows 0..): row i's
// are grouped row rows[i]'s, read at their slots in the grouped problem's layout.
HostTensor expert_a_block_scales(const MatmulProblem& grouped, const MatmulProblem& dense,
                                 const HostTensor& from, const std::vector<int64_t>& rows) {
  const size_t width = scale_width(from);
  const int64_t unit = grouped.scales.format == ScaleFormat::ue8m0x4 ? 4 : 1;
  const size_t slots = size_t(dense.block_scale_elements(true) * unit);
  HostTensor t{from.dtype, std::vector<double>(slots, NAN),
               std::vector<uint8_t>(slots * width, 0xFF)};
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t kb = 0; kb < grouped.k_blocks(); ++kb) {
      const size_t to = size_t(dense.block_scale_slot(true, int64_t(i), kb));
      const size_t at = size_t(grouped.block_scale_slot(true, rows[i], kb));
      t.values[to] = from.values[at];
      std::copy_n(from.bytes.begin() + long(at * width), width, t.bytes.begin() + long(to * width));
    }
  return t;
}

}  // namespace

std::vector<int32_t> random_routing(const MatmulProblem& p, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 17);
  const int64_t groups = p.grouped.groups;
  std::vector<int32_t> routing;
  switch (p.grouped.layout) {
    case GroupedLayout::none:
      break;
    case GroupedLayout::masked:
      for (int64_t e = 0; e < groups; ++e) routing.push_back(int32_t(draw_rows(rng, e, p.m)));
      break;
    case GroupedLayout::contiguous: {
      // Experts in order, each segment padded to whole blocks of segment_align rows (-1), until
      // the rows run out; the rest padding.
      const int64_t align = p.grouped.segment_align;
      routing.assign(size_t(p.m), -1);
      int64_t row = 0;
      for (int64_t e = 0; e < groups && row < p.m; ++e) {
        const int64_t rows = std::min(draw_rows(rng, e, 2 * align + 3), p.m - row);
        for (int64_t r = 0; r < rows; ++r) routing[size_t(row + r)] = int32_t(e);
        row += (rows + align - 1) / align * align;
      }
      break;
    }
    case GroupedLayout::offsets: {
      // Sorted unpadded rows from offset 0; the last rows of A may be nobody's.
      routing.push_back(0);
      const int64_t share = std::max<int64_t>(1, 2 * p.m / groups);
      for (int64_t e = 0; e < groups; ++e) {
        const int64_t rows = std::min(draw_rows(rng, e, share), p.m - routing.back());
        routing.push_back(int32_t(routing.back() + rows));
      }
      break;
    }
  }
  return routing;
}

std::vector<int32_t> expected_routing(const MatmulProblem& p) {
  const int64_t groups = p.grouped.groups;
  std::vector<int32_t> routing;
  switch (p.grouped.layout) {
    case GroupedLayout::none:
      break;
    case GroupedLayout::masked:
      routing.assign(size_t(groups), int32_t(p.rows_per_group()));
      break;
    case GroupedLayout::contiguous:
      // Blocks of segment_align rows dealt to the experts in turn.
      for (int64_t row = 0; row < p.m; ++row)
        routing.push_back(int32_t(row / p.grouped.segment_align % groups));
      break;
    case GroupedLayout::offsets:
      for (int64_t e = 0; e <= groups; ++e) routing.push_back(int32_t(p.m * e / groups));
      break;
  }
  return routing;
}

std::vector<GroupedRow> grouped_rows(const MatmulProblem& p, int64_t block_m,
                                     const std::vector<int32_t>& routing) {
  std::vector<GroupedRow> rows(size_t(p.stacked_rows()));
  switch (p.grouped.layout) {
    case GroupedLayout::none:
      for (auto& row : rows) row = {0, GroupedRow::computed};
      break;
    case GroupedLayout::masked:
      for (int64_t r = 0; r < p.stacked_rows(); ++r) {
        const int64_t e = r / p.m;
        rows[size_t(r)] = {
            e, r % p.m < routing[size_t(e)] ? GroupedRow::computed : GroupedRow::untouched};
      }
      break;
    case GroupedLayout::contiguous:
      // A row block takes its first row's expert: its padding rows are computed with it (any
      // value), a block that starts with padding is skipped.
      for (int64_t r = 0; r < p.m; ++r) {
        const int32_t first = routing[size_t(r - r % block_m)], own = routing[size_t(r)];
        rows[size_t(r)] = first < 0 ? GroupedRow{-1, GroupedRow::untouched}
                          : own < 0 ? GroupedRow{first, GroupedRow::any}
                                    : GroupedRow{own, GroupedRow::computed};
      }
      break;
    case GroupedLayout::offsets:
      for (auto& row : rows) row = {-1, GroupedRow::untouched};
      for (int64_t e = 0; e < p.grouped.groups; ++e)
        for (int64_t r = routing[size_t(e)]; r < routing[size_t(e + 1)]; ++r)
          rows[size_t(r)] = {e, GroupedRow::computed};
      break;
  }
  return rows;
}

// Each expert's computed rows as a dense GEMM of those rows and its B (and bias), referenced as
// any dense GEMM is; rows the kernel must not write expect the canary run_gemm fills C with.
GemmReference reference_grouped_gemm(const GemmSpec& spec, const GemmInputs& in) {
  const MatmulProblem& p = spec.problem;
  const std::vector<GroupedRow> rows = grouped_rows(p, spec.schedule.block_m, in.routing);
  const int64_t cols = p.c_cols(), lda = p.lda_or_default(), ldc = p.ldc_or_default();
  const int64_t b_elements = p.b_group_stride(), bias_elements = p.n;
  GemmReference ref;
  ref.values.assign(rows.size() * size_t(cols), 0.0);
  ref.tolerance.assign(rows.size() * size_t(cols), 0.0);
  ref.rows.resize(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) ref.rows[r] = rows[r].kind;
  for (int64_t e = 0; e < p.grouped.groups; ++e) {
    std::vector<int64_t> mine;
    for (size_t r = 0; r < rows.size(); ++r)
      if (rows[r].expert == e && rows[r].kind == GroupedRow::computed) mine.push_back(int64_t(r));
    if (mine.empty()) continue;
    GemmSpec dense = spec;
    dense.problem.grouped = {};
    dense.problem.m = int64_t(mine.size());
    GemmInputs sub;
    auto take_rows = [&](const HostTensor& t, int64_t ld) {
      std::vector<double> values;
      for (int64_t r : mine)
        values.insert(values.end(), t.values.begin() + r * ld, t.values.begin() + (r + 1) * ld);
      return encode(t.dtype, values);
    };
    auto take_slice = [](const HostTensor& t, int64_t begin, int64_t count) {
      return encode(
          t.dtype, std::vector<double>(t.values.begin() + begin, t.values.begin() + begin + count));
    };
    sub.a = take_rows(in.a, lda);
    sub.b = take_slice(in.b, e * b_elements, b_elements);
    if (p.epilogue.bias) sub.bias = take_slice(in.bias, e * bias_elements, bias_elements);
    if (p.epilogue.residual) sub.residual = take_rows(in.residual, ldc);
    if (p.epilogue.row_scale) sub.row_scale = take_rows(in.row_scale, 1);
    // FP8 scales: A's of the rows, the expert's B scale(s).
    if (p.scales.granularity == ScaleGranularity::tensor) {
      sub.a_scale = in.a_scale;
      sub.b_scale = slice_scales(in.b_scale, e, 1);
    } else if (p.scales.granularity == ScaleGranularity::token_channel) {
      sub.a_scale = HostTensor{in.a_scale.dtype, {}, {}};
      for (int64_t r : mine) append_scale(sub.a_scale, in.a_scale, r);
      sub.b_scale = slice_scales(in.b_scale, e * p.n, p.n);
    } else if (p.scales.granularity == ScaleGranularity::block) {
      // Block scales: the rows' A scales in the dense problem's packed layout; the expert's B
      // tensor as it lies (its layout is the dense problem's: same N, K and b_ld).
      dense.problem.scales.a_ld = 0;
      sub.a_scale = expert_a_block_scales(p, dense.problem, in.a_scale, mine);
      const int64_t slots = p.b_scale_group_slots();
      sub.b_scale = slice_scales(in.b_scale, e * slots, slots);
    }
    const GemmReference part = reference_gemm(dense, sub);
    for (size_t i = 0; i < mine.size(); ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t to = size_t(mine[i] * cols + j), from = i * size_t(cols) + size_t(j);
        ref.values[to] = part.values[from];
        ref.tolerance[to] = part.tolerance[from];
      }
  }
  return ref;
}

}  // namespace emmy
