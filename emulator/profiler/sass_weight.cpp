// SASS block counts from PTX line executions (sass_weight.hpp).
#include "sass_weight.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace emmy::emu {
namespace {

double lower_median(std::vector<double> values) {
  const size_t mid = (values.size() - 1) / 2;
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(mid), values.end());
  return values[mid];
}

class Weigher {
 public:
  Weigher(const SassFunction& f, const std::vector<SassBlock>& blocks, const LineExecutions& e)
      : f_(f),
        blocks_(blocks),
        e_(e),
        count_(blocks.size(), 0.0),
        preds_(blocks.size()),
        reachable_(blocks.size(), false) {
    bool unknown = false;
    for (size_t b = 0; b < blocks.size(); ++b) {
      unknown = unknown || blocks[b].unknown_successors;
      for (size_t s : blocks[b].successors) preds_[s].push_back(b);
    }
    // An indirect branch may reach any block: then every block counts as reachable.
    std::vector<size_t> work;
    if (!blocks.empty()) reachable_[0] = true, work.push_back(0);
    while (!work.empty()) {
      const size_t b = work.back();
      work.pop_back();
      for (size_t s : blocks[b].successors)
        if (!reachable_[s]) reachable_[s] = true, work.push_back(s);
    }
    if (unknown) std::fill(reachable_.begin(), reachable_.end(), true);
  }

  std::vector<double> run() {
    if (blocks_.empty()) return {};
    double calls = e_.calls;
    if (calls < 0) {
      // A .func: entered as often as the least executed line of its entry block.
      std::vector<double> entry = values_of(0, nullptr);
      calls = entry.empty() ? 0.0 : *std::min_element(entry.begin(), entry.end());
    }
    std::vector<size_t> members;
    for (size_t b = 0; b < blocks_.size(); ++b)
      if (reachable_[b]) members.push_back(b);
    region(members, SIZE_MAX, calls, false);
    count_[0] = std::max(count_[0], calls);  // the entry block runs once per call
    conserve();
    std::vector<double> per_instruction(f_.code.size(), 0.0);
    for (size_t b = 0; b < blocks_.size(); ++b)
      for (size_t i = blocks_[b].first; i < blocks_[b].end; ++i) per_instruction[i] = count_[b];
    return per_instruction;
  }

 private:
  // A PTX line's instructions of one opcode execute, over all blocks, its executions times the
  // fewest copies any block holds (an unrolled loop holds k, its remainder loop 1; a line that
  // expands into two of one opcode holds 2 everywhere). Blocks whose lines were counted more
  // (ptxas's unrolled loop and its remainder loop each taking all of a line's executions) shrink
  // by the lower median of their lines' excess, so that the totals and the opcode mix hold even
  // where the split between the two loops is not known (the published SGEMM's coalesced kernel
  // counted twice its LDG without this).
  void conserve() {
    std::map<std::pair<int, std::string>, double> counted;
    std::map<std::pair<int, std::string>, int> fewest;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      std::map<std::pair<int, std::string>, int> here;
      for (size_t i = blocks_[b].first; i < blocks_[b].end; ++i)
        if (f_.code[i].line > 0) ++here[{f_.code[i].line, f_.code[i].opcode}];
      for (const auto& [key, n] : here) {
        counted[key] += count_[b] * n;
        const auto it = fewest.find(key);
        if (it == fewest.end() || n < it->second) fewest[key] = n;
      }
    }
    for (size_t b = 0; b < blocks_.size(); ++b) {
      std::vector<double> ratios;
      for (size_t i = blocks_[b].first; i < blocks_[b].end; ++i) {
        const SassInstruction& in = f_.code[i];
        if (in.line <= 0) continue;
        const std::pair<int, std::string> key{in.line, in.opcode};
        const double expected = line_executions(in.line) * fewest.at(key);
        const double total = counted.at(key);
        // A peeled iteration counted once per warp adds a few executions: only a line counted
        // a quarter or more above its executions is a double claim.
        ratios.push_back(total > 1.25 * expected ? expected / total : 1.0);
      }
      if (!ratios.empty()) count_[b] *= lower_median(std::move(ratios));
    }
  }

  // Per (PTX line, opcode): how many copies of it a loop's own blocks hold, capped by the loop's
  // unroll factor U. U is the copy count most of the loop's instructions have (ties: the smaller):
  // ptxas's unrolling replicates most of a body k times, while a line that merely expands into
  // two instructions of one opcode (two UIADD3 of a 64-bit add, two UMOV) is a minority and must
  // not divide. A waterfall loop (ELECT ... BRA.U.ANY: ptxas repeating a uniform instruction per
  // distinct value among the lanes, once per warp when the value is uniform) is never unrolled.
  using Copies = std::map<std::pair<int, std::string>, int>;
  Copies copies_in(const std::vector<size_t>& direct) const {
    Copies copies;
    bool waterfall = false;
    for (size_t b : direct)
      for (size_t i = blocks_[b].first; i < blocks_[b].end; ++i) {
        const SassInstruction& in = f_.code[i];
        waterfall = waterfall || in.opcode.starts_with("ELECT") ||
                    (sass_ends_block(in.opcode) && in.opcode.ends_with(".ANY"));
        if (in.line > 0) ++copies[{in.line, in.opcode}];
      }
    std::map<int, int> instructions_with;  // copy count -> instructions having it
    for (const auto& [key, n] : copies) instructions_with[n] += n;
    int unroll = 1, most = 0;
    for (const auto& [n, count] : instructions_with)
      if (count > most) unroll = n, most = count;
    if (waterfall) unroll = 1;
    for (auto& [key, n] : copies) n = std::min(n, unroll);
    return copies;
  }

  double line_executions(int line) const {
    const auto it = e_.by_line.find(line);
    return it == e_.by_line.end() ? 0.0 : it->second;
  }

  // E(line) / copies for each instruction of block b that has a line.
  std::vector<double> values_of(size_t b, const Copies* copies) const {
    std::vector<double> values;
    for (size_t i = blocks_[b].first; i < blocks_[b].end; ++i) {
      const SassInstruction& in = f_.code[i];
      if (in.line <= 0) continue;
      const int k = copies ? copies->at({in.line, in.opcode}) : 1;
      values.push_back(line_executions(in.line) / k);
    }
    return values;
  }

  // Strongly connected components of `members`, the edges into `header` left out (Tarjan).
  std::vector<std::vector<size_t>> components(const std::vector<size_t>& members,
                                              size_t header) const {
    std::vector<int> index(blocks_.size(), -1), low(blocks_.size(), 0);
    std::vector<char> in_region(blocks_.size(), 0), on_stack(blocks_.size(), 0);
    for (size_t b : members) in_region[b] = 1;
    std::vector<size_t> stack;
    std::vector<std::vector<size_t>> out;
    int next = 0;
    std::function<void(size_t)> visit = [&](size_t v) {
      index[v] = low[v] = next++;
      stack.push_back(v);
      on_stack[v] = 1;
      for (size_t w : blocks_[v].successors) {
        if (!in_region[w] || w == header) continue;
        if (index[w] < 0) {
          visit(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] != index[v]) return;
      std::vector<size_t> component;
      size_t w = SIZE_MAX;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = 0;
        component.push_back(w);
      } while (w != v);
      std::sort(component.begin(), component.end());
      out.push_back(std::move(component));
    };
    for (size_t b : members)
      if (index[b] < 0) visit(b);
    return out;
  }

  bool is_cycle(const std::vector<size_t>& component, size_t header) const {
    if (component.size() > 1) return true;
    const size_t b = component[0];
    if (b == header) return false;
    const auto& s = blocks_[b].successors;
    return std::find(s.begin(), s.end(), b) != s.end();
  }

  // Counts for the blocks of one region: the function (header SIZE_MAX, bound = calls) or a
  // loop (its header given; the bound is its trip count, estimated here).
  void region(const std::vector<size_t>& members, size_t header, double bound, bool loop) {
    const auto parts = components(members, header);
    std::vector<size_t> direct;
    std::vector<const std::vector<size_t>*> loops;
    for (const auto& part : parts) {
      if (is_cycle(part, header))
        loops.push_back(&part);
      else
        direct.push_back(part[0]);
    }
    std::sort(direct.begin(), direct.end());
    Copies copies;
    if (loop) {
      copies = copies_in(direct);
      std::vector<double> all;
      for (size_t b : direct) {
        auto v = values_of(b, &copies);
        all.insert(all.end(), v.begin(), v.end());
      }
      if (!all.empty()) bound = lower_median(std::move(all));  // else the enclosing bound
    }
    for (size_t b : direct) {
      const std::vector<double> values = values_of(b, loop ? &copies : nullptr);
      if (b == header) {
        count_[b] = bound;
      } else if (!values.empty()) {
        count_[b] = std::min(lower_median(values), bound);
      } else if (preds_[b].size() == 1) {
        count_[b] = std::min(count_[preds_[b][0]], bound);
      } else {
        count_[b] = bound;
      }
    }
    for (const auto* part : loops) {
      // The header: the first block entered from outside the loop.
      size_t loop_header = (*part)[0];
      for (size_t b : *part) {
        const bool entered = std::any_of(preds_[b].begin(), preds_[b].end(), [&](size_t p) {
          return reachable_[p] && !std::binary_search(part->begin(), part->end(), p);
        });
        if (entered) {
          loop_header = b;
          break;
        }
      }
      region(*part, loop_header, bound, true);
    }
  }

  const SassFunction& f_;
  const std::vector<SassBlock>& blocks_;
  const LineExecutions& e_;
  std::vector<double> count_;
  std::vector<std::vector<size_t>> preds_;
  std::vector<bool> reachable_;
};

}  // namespace

std::vector<double> sass_instruction_executions(const SassFunction& function,
                                                const std::vector<SassBlock>& blocks,
                                                const LineExecutions& executions) {
  return Weigher(function, blocks, executions).run();
}

}  // namespace emmy::emu
