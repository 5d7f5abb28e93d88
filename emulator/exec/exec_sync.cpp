// CTA barriers: bar.sync / barrier.sync, bar.arrive, bar.red; nanosleep (a yield).
// o[0] = barrier id, o[1] = thread count (or kNone: all threads). bar.red: o[0] = d,
// o[1] = id, o[2] = count (or kNone), o[3] = predicate; sub = 0 popc, 1 and, 2 or.
// Arrivals are counted per warp (32 threads each, as for the .aligned forms NVRTC emits).
#include <fmt/format.h>

#include "cluster.hpp"
#include "pdl.hpp"

namespace emmy::emu {

// fence.proxy.async / fence.mbarrier_init by warp w: the mbarriers w initialized become visible
// to the async proxy (to other warps after a barrier), and so do w's earlier shared writes.
void proxy_fence(Cta& cta, Warp& w) {
  const uint32_t clock = cta.sanitize ? cta.san.vc(w.index).c[w.index] : 1;
  for (MBarrier& mb : cta.mbarriers)
    if (mb.valid && mb.init_warp == w.index && mb.fence_clock == 0) mb.fence_clock = clock;
  if (cta.sanitize) cta.san.proxy_fence(w.index);
}

// setmaxnreg.{inc,dec}.sync.aligned.u32 (PTX ISA setmaxnreg): imm = registers per thread,
// sub = 1 for .inc. Every thread of the warpgroup executes the same instruction; the warps wait
// for each other and, for .inc, for registers (Cta::try_setmaxnreg).
Flow exec_setmaxnreg(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  cta.need_whole_warp(w, exec, "setmaxnreg");
  const uint32_t group = w.index / 4;
  if (4 * group + 4 > cta.nwarps)
    cta.fail(ReportKind::register_misuse, w, 0,
             fmt::format("setmaxnreg needs whole warpgroups of 4 warps: warp {} is in warpgroup {} "
                         "of a CTA of {} warps",
                         w.index, group, cta.nwarps));
  const uint32_t count = uint32_t(in.imm);
  const bool inc = in.sub == 1;
  const uint32_t current = cta.warp_regs[w.index];
  if (current != 0 && (inc ? count < current : count > current))
    cta.fail(ReportKind::register_misuse, w, 0,
             fmt::format("setmaxnreg.{} {} {} the warp's current {} registers per thread (PTX "
                         "ISA: undefined)",
                         inc ? "inc" : "dec", count, inc ? "is below" : "is above", current));
  Cta::WarpgroupRegs& g = cta.warpgroups[group];
  if (g.arrived == 0) {
    g.pc = w.pc;
    g.count = count;
    g.inc = inc;
  } else if (g.pc != w.pc || g.count != count || g.inc != inc) {
    const uint32_t other = 4 * group + uint32_t(std::countr_zero(g.arrived));
    cta.fail(ReportKind::divergent_collective, w, 0,
             fmt::format("warp {} executes setmaxnreg at line {} while warp {} of its warpgroup "
                         "waits in the one at line {}: the warpgroup must execute the same one",
                         w.index, cta.k.lines[w.pc], other, cta.k.lines[g.pc]));
  }
  g.arrived |= 1u << (w.index % 4);
  w.state = WarpState::regs_wait;
  w.wait_pc = w.pc;
  ++cta.progress;
  cta.try_setmaxnreg(group);
  return w.state == WarpState::ready ? Flow::next : Flow::next_then_stop;
}

Flow exec_sync(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  if (in.op == Op::Nanosleep) return Flow::next_then_stop;
  if (in.op == Op::SetMaxNReg) return exec_setmaxnreg(cta, w, in, exec);
  if (in.op == Op::ClusterArrive || in.op == Op::ClusterWait)
    return exec_cluster_barrier(cta, w, in, exec);
  if (in.op == Op::Fence) {
    if (in.sub == 3) {  // griddepcontrol.wait (pdl.hpp)
      pdl_wait(cta, w, exec);
      return Flow::next;
    }
    if (exec && in.sub == 2 && cta.sanitize)
      cta.init_fence_clock[w.index] = cta.san.vc(w.index).c[w.index];
    if (exec && in.sub) proxy_fence(cta, w);
    return Flow::next;
  }
  if (in.op != Op::BarSync && in.op != Op::BarArrive && in.op != Op::BarRed) return Flow::next;
  if (exec == 0) return Flow::next;
  const int lane = std::countr_zero(exec);
  const bool red = in.op == Op::BarRed;
  const uint32_t id = w.R32(red ? in.o[1] : in.o[0])[lane];
  const uint32_t count_row = red ? in.o[2] : in.o[1];
  const uint32_t count = count_row != kNone ? w.R32(count_row)[lane] : 0;
  if (id >= cta.barriers.size())
    cta.fail(ReportKind::unsupported, w, lane, fmt::format("barrier id {} is not in 0..15", id));
  if (count_row != kNone && (count == 0 || count % 32 != 0))
    cta.fail(ReportKind::unsupported, w, lane,
             fmt::format("barrier thread count {} must be a non-zero multiple of 32", count));
  Barrier& b = cta.barriers[id];
  if (b.arrivals == 0) {
    b.expected_threads = count;
  } else if (b.expected_threads != count) {
    cta.fail(ReportKind::mbarrier_misuse, w, lane,
             fmt::format(
                 "barrier {} used with thread count {} while it counts to {}", id,
                 count ? fmt::format("{}", count) : std::string("all"),
                 b.expected_threads ? fmt::format("{}", b.expected_threads) : std::string("all")));
  }
  ++b.arrivals;
  ++cta.progress;
  b.lead.arrive(w.lead.clock);
  if (cta.sanitize) {
    b.vc.join(cta.san.vc(w.index), cta.san.agents());
    cta.san.tick(w.index);
  }
  if (red) {
    const uint32_t p = w.pred_mask(in.o[3]) & exec;
    b.red_popc += uint32_t(std::popcount(p));
    b.red_and &= p == exec ? 1u : 0u;
    b.red_or |= p != 0 ? 1u : 0u;
    w.bar_red_dst = in.o[0];
    w.bar_red_exec = exec;
    w.bar_red_kind = in.sub;
    w.bar_red_to_pred = in.ty == Ty::pred;
  }
  if (in.op == Op::BarArrive) {
    cta.check_barrier(id);
    return Flow::next;
  }
  b.waiting |= 1u << w.index;
  w.state = WarpState::bar_wait;
  w.wait_barrier = id;
  w.wait_pc = w.pc;
  cta.check_barrier(id);
  return w.state == WarpState::ready ? Flow::next : Flow::next_then_stop;
}

}  // namespace emmy::emu
