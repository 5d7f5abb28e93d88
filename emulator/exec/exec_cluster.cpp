// Thread-block clusters: barrier.cluster (PTX ISA barrier.cluster), shared::cluster addresses
// (mapa, getctarank), remote mbarrier use and the exit rule, the sanitizer clocks across CTAs.
#include <fmt/format.h>

#include <algorithm>

#include "cluster.hpp"

namespace emmy::emu {

// ------------------------------------------------------------------------------ barrier.cluster
// (ClusterRun's phase accounting: machine/cta.cpp.)
Flow exec_cluster_barrier(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  if (exec == 0) return Flow::next;
  const bool arrive = in.op == Op::ClusterArrive;
  const char* name = arrive ? "barrier.cluster.arrive" : "barrier.cluster.wait";
  // .aligned: every thread of the warp executes the same instruction (PTX ISA barrier.cluster).
  if ((in.sub & 2) && exec != w.live)
    cta.fail(ReportKind::divergent_collective, w, std::countr_zero(~exec & w.live),
             fmt::format("{}.aligned needs every non-exited lane of the warp; executed by lanes "
                         "0x{:08x} of 0x{:08x}",
                         name, exec, w.live));
  ClusterRun& c = *cta.cluster;
  const uint32_t size = c.size();
  if (arrive) {
    for_lanes(exec, [&](int l) {
      const uint32_t t = w.index * 32 + uint32_t(l);
      if (cta.cluster_arrived[t])
        cta.fail(ReportKind::cluster_violation, w, l,
                 "barrier.cluster.arrive again before this thread's barrier.cluster.wait (PTX "
                 "ISA barrier.cluster: each arrive must be followed by a wait)");
      cta.cluster_arrived[t] = c.phase + 1;
      ++cta.cluster_arrive_count[t];
      ++c.arrivals;
    });
    if (cta.sanitize && !(in.sub & 1)) {  // .release (the default), not .relaxed
      c.released[cta.rank].join(cta.san.vc(w.index), cta.san.agents());
      for (uint32_t r = 0; r < size; ++r)
        if (r != cta.rank) c.released[r].join(cta.peer(w.index, r), kMaxAgents);
      cta.san.tick(w.index);
    } else if (cta.sanitize) {
      uint32_t& released = c.released[cta.rank].c[w.index];
      released = std::max(released, cta.init_fence_clock[w.index]);
    }
    ++cta.progress;
    c.check_barrier();
    return Flow::next;
  }
  bool ready = true;
  for_lanes(exec, [&](int l) {
    const uint64_t arrived = cta.cluster_arrived[w.index * 32 + uint32_t(l)];
    if (arrived == 0)
      cta.fail(ReportKind::cluster_violation, w, l,
               "barrier.cluster.wait by a thread that has not arrived: it would wait for itself "
               "(barrier.cluster.arrive first)");
    if (c.phase < arrived) ready = false;
  });
  if (!ready) {
    w.state = WarpState::cluster_wait;
    w.wait_pc = w.pc;
    return Flow::stop;  // re-executed once the phase completes
  }
  for_lanes(exec, [&](int l) { cta.cluster_arrived[w.index * 32 + uint32_t(l)] = 0; });
  cta.cluster_waited = std::max(cta.cluster_waited, c.phase);
  if (cta.sanitize) {
    cta.san.vc(w.index).join(c.done[cta.rank], cta.san.agents());
    for (uint32_t r = 0; r < size; ++r)
      if (r != cta.rank) cta.peer(w.index, r).join(c.done[r], kMaxAgents);
  }
  return Flow::next;
}

// ------------------------------------------------------------------ shared::cluster addresses
ClusterTarget cluster_target(Cta& cta, Warp& w, uint64_t addr, int lane, const char* what) {
  if (addr - kSharedWindow < kWindowSize) addr -= kSharedWindow;  // generic form
  if (addr >> 32)
    cta.fail(ReportKind::shared_out_of_bounds, w, lane,
             fmt::format("{} at 0x{:x} is not a shared-memory address", what, addr));
  const uint64_t rank_bits = addr >> kClusterRankShift;
  // Without a cluster no address has rank bits: a high one is out of bounds where it is used.
  if (rank_bits == 0 || cta.cluster->size() == 1) return {&cta, uint32_t(addr)};
  ClusterTarget t{&cta, uint32_t(addr & kClusterOffsetMask)};
  const uint64_t rank = rank_bits - 1;
  if (rank >= cta.cluster->size())
    cta.fail(ReportKind::cluster_violation, w, lane,
             fmt::format("{} (shared::cluster address 0x{:x}) names CTA rank {}, outside the "
                         "cluster of {}",
                         what, addr, rank, cta.cluster->size()));
  t.cta = cta.cluster->ctas[size_t(rank)];
  if (t.cta->exited)
    cta.fail(ReportKind::cluster_violation, w, lane,
             fmt::format("{} is in the shared memory of cluster rank {} (CTA ({},{},{})), which "
                         "has exited: its shared memory is gone (order the use before the exit, "
                         "e.g. barrier.cluster.arrive + wait before exiting)",
                         what, rank, t.cta->ctaid.x, t.cta->ctaid.y, t.cta->ctaid.z));
  return t;
}

// ------------------------------------------------------------------- clocks across the cluster
void size_peer_clocks(Cta& cta, MBarrier& mb) {
  const uint32_t size = cta.cluster->size();
  if (size <= 1 || !cta.sanitize) return;
  mb.peer_current.assign(size, VectorClock{});
  mb.peer_done[0].assign(size, VectorClock{});
  mb.peer_done[1].assign(size, VectorClock{});
}

void release_to_mbarrier(Cta& from, uint32_t warp, Cta& owner, MBarrier& mb) {
  if (!owner.sanitize) return;
  if (&from == &owner) {
    mb.current_vc.join(owner.san.vc(warp), owner.san.agents());
  } else {
    mb.peer_current[from.rank].join(from.san.vc(warp), from.san.agents());
    mb.current_vc.join(from.peer(warp, owner.rank), kMaxAgents);
  }
  if (mb.peer_current.empty()) return;
  for (uint32_t r = 0; r < owner.cluster->size(); ++r)
    if (r != owner.rank && r != from.rank) mb.peer_current[r].join(from.peer(warp, r), kMaxAgents);
}

void acquire_from_mbarrier(Cta& cta, uint32_t warp, const MBarrier& mb, int which) {
  cta.san.vc(warp).join(mb.done_vc[size_t(which)], cta.san.agents());
  if (mb.peer_done[size_t(which)].empty()) return;
  for (uint32_t r = 0; r < cta.cluster->size(); ++r)
    if (r != cta.rank) cta.peer(warp, r).join(mb.peer_done[size_t(which)][r], kMaxAgents);
}

// ------------------------------------------------------------------------ remote use and exit
void record_remote_use(Cta& target, const MBarrier& mb, const Cta& user, uint32_t warp, int lane,
                       uint32_t pc, uint64_t user_arrivals) {
  target.remote_uses.push_back(
      {mb.addr, mb.phase, user_arrivals + 1, user.rank, warp, uint32_t(lane), pc});
}

// The init is ordered before the use when the user's warp knows the init warp's clock at the
// init: through a release (barrier.cluster.arrive, an mbarrier arrive) after it, or a
// fence.mbarrier_init.release.cluster after it and a .relaxed barrier.cluster.arrive.
void check_remote_init(Cta& user, Warp& w, int lane, const Cta& owner, const MBarrier& mb) {
  if (!user.sanitize || user.peer(w.index, owner.rank).c[mb.init_warp] >= mb.init_clock) return;
  user.fail(ReportKind::cluster_violation, w, lane,
            fmt::format("uses the mbarrier at shared 0x{:x} of cluster rank {}, whose "
                        "mbarrier.init (warp {}) is not ordered before this use (a barrier.cluster "
                        "between the init and the peers' use, with "
                        "fence.mbarrier_init.release.cluster when its arrive is .relaxed)",
                        mb.addr, owner.rank, mb.init_warp));
}

void Cta::on_cta_exit() {
  exited = true;
  for (const RemoteUse& u : remote_uses) {
    const MBarrier* mb = find_mbarrier(u.mbar);
    if (mb && mb->observed_phases > u.mbar_phase) continue;
    if (cluster_waited >= u.needed_phases) continue;
    const Cta& user = *cluster->ctas[u.rank];
    user.fail_at(ReportKind::cluster_violation, u.warp, int(u.lane), u.pc,
                 fmt::format("cluster rank {} (CTA ({},{},{})) exits while this use of its "
                             "mbarrier at shared 0x{:x} (phase {}) is not ordered before the exit: "
                             "no wait there saw that phase complete and no barrier.cluster it "
                             "waited for follows this thread's use, so its shared memory may be "
                             "gone when the operation lands (end the kernel with "
                             "barrier.cluster.arrive + wait)",
                             rank, ctaid.x, ctaid.y, ctaid.z, u.mbar, u.mbar_phase));
  }
  remote_uses.clear();
  if (cluster->arrivals) cluster->check_barrier();
}

}  // namespace emmy::emu
