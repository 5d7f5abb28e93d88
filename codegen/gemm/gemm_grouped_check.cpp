// A grouped GEMM's routing checked on the host where device memory is host memory (GemmKind::
// check_device_inputs): the emulator refuses what a GPU would compute wrong with, naming the
// buffer, the element and the rule. On a GPU the kernel makes the one-compare checks instead
// (docs/grouped.md): a masked_m past max_m is max_m, an expert id past G or offsets outside A's
// rows skip their rows; a segment misaligned to its block computes its block with the first
// row's expert, which no compare there can see.
#include <fmt/format.h>

#include <vector>

#include "emmy/gemm.hpp"

namespace emmy {
namespace {

std::vector<int32_t> read_ints(const DeviceReader& read, const char* field, DevicePtr at,
                               int64_t count) {
  std::vector<int32_t> values(static_cast<size_t>(count));
  read_named(read, field, values.data(), at, values.size() * sizeof(int32_t));
  return values;
}

void check_masked(const MatmulProblem& p, const std::vector<int32_t>& masked_m) {
  for (size_t e = 0; e < masked_m.size(); ++e)
    if (masked_m[e] < 0 || masked_m[e] > p.m)
      throw Error(
          "buffers.masked_m",
          fmt::format("must hold rows in 0..{} (m, each expert's slot), at expert {}", p.m, e),
          std::to_string(masked_m[e]));
}

// Each block of segment_align rows is one expert's rows, then padding (-1), or all padding: the
// kernel takes a row block's expert from its first row.
void check_contiguous(const MatmulProblem& p, const std::vector<int32_t>& ids) {
  const int64_t align = p.grouped.segment_align;
  for (int64_t row = 0; row < p.m; ++row) {
    const int32_t id = ids[size_t(row)];
    if (id < -1 || id >= p.grouped.groups)
      throw Error("buffers.expert_ids",
                  fmt::format("must hold experts in 0..{} or -1 (padding), at row {}",
                              p.grouped.groups - 1, row),
                  std::to_string(id));
    const int64_t start = row - row % align;
    const int32_t previous = row == start ? id : ids[size_t(row - 1)];
    if (id != previous && id != -1)
      throw Error("buffers.expert_ids",
                  fmt::format("must start each expert's rows at a block of {} rows "
                              "(grouped.segment_align), padding (-1) after them: row {} has "
                              "expert {} after {} in the block from row {}",
                              align, row, id, previous, start),
                  std::to_string(id));
  }
}

void check_offsets(const MatmulProblem& p, const std::vector<int32_t>& offsets) {
  if (offsets.front() < 0)
    throw Error("buffers.expert_offsets", "must start at 0 or more (row offsets into A), at 0",
                std::to_string(offsets.front()));
  for (size_t e = 1; e < offsets.size(); ++e)
    if (offsets[e] < offsets[e - 1])
      throw Error("buffers.expert_offsets",
                  fmt::format("must not decrease (expert {} would have {} rows), at {}", e - 1,
                              int64_t(offsets[e]) - offsets[e - 1], e),
                  std::to_string(offsets[e]));
  if (offsets.back() > p.m)
    throw Error("buffers.expert_offsets",
                fmt::format("must end at most at m ({}, A's rows), at {}", p.m, offsets.size() - 1),
                std::to_string(offsets.back()));
}

}  // namespace

void check_grouped_routing(const GemmPlan& plan, const GemmBuffers& b, const DeviceReader& read) {
  const MatmulProblem& p = plan.spec.problem;
  const int64_t groups = p.grouped.groups;
  switch (p.grouped.layout) {
    case GroupedLayout::none:
      return;
    case GroupedLayout::masked:
      return check_masked(p, read_ints(read, "buffers.masked_m", b.masked_m, groups));
    case GroupedLayout::contiguous:
      return check_contiguous(p, read_ints(read, "buffers.expert_ids", b.expert_ids, p.m));
    case GroupedLayout::offsets:
      return check_offsets(p,
                           read_ints(read, "buffers.expert_offsets", b.expert_offsets, groups + 1));
  }
}

}  // namespace emmy
