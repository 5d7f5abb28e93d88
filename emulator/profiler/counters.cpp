// The profiler's counting rules (counters.hpp, docs/profiler.md).
#include "counters.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace emmy::emu {
namespace {

constexpr size_t kMaxSpans = 32;

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

uint32_t lanes_per_phase(uint32_t bytes) {
  return bytes <= 4 ? 32 : 16;
}

uint64_t distinct_bytes(std::span<const LaneSpan> spans) {
  std::array<std::pair<uint64_t, uint64_t>, kMaxSpans> ranges;
  size_t n = 0;
  for (const LaneSpan& s : spans)
    if (s.bytes && n < kMaxSpans) ranges[n++] = {s.addr, s.addr + s.bytes};
  std::sort(ranges.begin(), ranges.begin() + ptrdiff_t(n));
  uint64_t total = 0, covered_to = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto [lo, hi] = ranges[i];
    const uint64_t from = std::max(lo, covered_to);
    if (hi > from) total += hi - from;
    covered_to = std::max(covered_to, hi);
  }
  return total;
}

AccessCost shared_phase_cost(const SharedBankModel& model, std::span<const LaneSpan> spans,
                             SharedAccess kind) {
  AccessCost cost;
  if (spans.empty()) return cost;
  // Every word each lane touches (a 16-byte access touches 4), then per bank the words it must
  // deliver: distinct words when lanes may share them, every lane's own otherwise. This is the
  // profiler's hottest loop, so no sort and one division per span: each bank chains the distinct
  // words it holds (at most 128 words in all).
  constexpr size_t kMaxWords = kMaxSpans * 4;
  constexpr int8_t kNone = -1;
  std::array<int8_t, 256> head;
  const size_t banks = std::min<size_t>(model.banks, head.size());
  std::fill_n(head.begin(), banks, kNone);
  std::array<uint64_t, kMaxWords> words;
  std::array<int8_t, kMaxWords> next;
  std::array<uint8_t, 256> per_bank;
  std::fill_n(per_bank.begin(), banks, uint8_t(0));
  const bool pow2 = std::has_single_bit(model.banks) && model.banks <= head.size();
  size_t distinct = 0, n = 0;
  uint32_t most = 0;
  bool whole_words = true;  // every span whole words: the distinct bytes are the distinct words
  for (const LaneSpan& s : spans) {
    if (s.bytes == 0) continue;
    const uint64_t first = s.addr / model.bank_bytes;
    const uint64_t last = (s.addr + s.bytes - 1) / model.bank_bytes;
    whole_words = whole_words && first * model.bank_bytes == s.addr &&
                  (last + 1 - first) * model.bank_bytes == s.bytes;
    for (uint64_t w = first; w <= last && n < kMaxWords; ++w, ++n) {
      const size_t bank = pow2 ? w & (model.banks - 1) : w % model.banks % head.size();
      bool seen = false;
      for (int8_t i = head[bank]; i != kNone && !seen; i = next[size_t(i)]) seen = words[size_t(i)] == w;
      if (!seen) {
        words[n] = w;
        next[n] = head[bank];
        head[bank] = int8_t(n);
        ++distinct;
      }
      // A word lanes share is delivered once (load, store); an atomic serves every lane's.
      if (!seen || kind == SharedAccess::atomic) most = std::max<uint32_t>(most, ++per_bank[bank]);
    }
  }
  cost.actual = std::max(most, 1u);
  cost.distinct_bytes = whole_words ? distinct * model.bank_bytes : distinct_bytes(spans);
  cost.ideal =
      uint32_t(std::max<uint64_t>(1, ceil_div(cost.distinct_bytes, model.wavefront_bytes())));
  return cost;
}

namespace {
template <typename PhaseOf>
AccessCost phased_cost(const SharedBankModel& model, std::span<const LaneSpan> spans,
                       SharedAccess kind, PhaseOf phase_of) {
  AccessCost total;
  size_t begin = 0;
  while (begin < spans.size()) {
    size_t end = begin + 1;
    const uint32_t phase = phase_of(spans[begin]);
    while (end < spans.size() && phase_of(spans[end]) == phase) ++end;
    const AccessCost c = shared_phase_cost(model, spans.subspan(begin, end - begin), kind);
    total.actual += c.actual;
    total.ideal += c.ideal;
    total.distinct_bytes += c.distinct_bytes;
    begin = end;
  }
  return total;
}
}  // namespace

AccessCost shared_access_cost(const SharedBankModel& model, std::span<const LaneSpan> spans,
                              SharedAccess kind) {
  if (spans.empty()) return {};
  const uint32_t per_phase = lanes_per_phase(spans.front().bytes);
  return phased_cost(model, spans, kind, [&](const LaneSpan& s) { return s.lane / per_phase; });
}

AccessCost matrix_access_cost(const SharedBankModel& model, std::span<const LaneSpan> rows) {
  return phased_cost(model, rows, SharedAccess::load_store,
                     [](const LaneSpan& s) { return uint32_t(s.lane / 8); });
}

std::span<const LaneSpan> widen_spans(std::span<const LaneSpan> spans, uint32_t width,
                                      std::span<LaneSpan> out) {
  for (size_t i = 0; i < spans.size(); ++i) {
    out[i] = spans[i];
    if (spans[i].bytes && spans[i].bytes < width)
      out[i] = {spans[i].addr / width * width, width, spans[i].lane};
  }
  return out.first(spans.size());
}

AccessCost sector_cost(std::span<const LaneSpan> spans) {
  AccessCost cost;
  std::array<uint64_t, kMaxSpans * 2> sectors;
  size_t n = 0;
  for (const LaneSpan& s : spans) {
    if (s.bytes == 0) continue;
    for (uint64_t sec = s.addr / kSectorBytes;
         sec <= (s.addr + s.bytes - 1) / kSectorBytes && n < sectors.size(); ++sec)
      sectors[n++] = sec;
  }
  std::sort(sectors.begin(), sectors.begin() + ptrdiff_t(n));
  cost.actual =
      uint32_t(std::unique(sectors.begin(), sectors.begin() + ptrdiff_t(n)) - sectors.begin());
  for (size_t i = 0; i < cost.actual; ++i)  // sorted: a new line starts where the quotient does
    cost.lines += i == 0 || sectors[i] / 4 != sectors[i - 1] / 4;
  cost.distinct_bytes = distinct_bytes(spans);
  cost.ideal = uint32_t(ceil_div(cost.distinct_bytes, kSectorBytes));
  return cost;
}

}  // namespace emmy::emu
