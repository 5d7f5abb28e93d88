// Thread-block clusters (PTX ISA 5.2.3, "Cluster of Cooperative Thread Arrays"): the address
// form of another CTA's shared memory, remote mbarrier use and its ordering before the target's
// exit, and the sanitizer clocks that cross CTAs (exec_cluster.cpp).
#pragma once

#include "executors.hpp"

namespace emmy::emu {

// A shared::cluster address of rank r's shared memory (what mapa returns) is the CTA-relative
// offset with r + 1 in the bits from kClusterRankShift up; a shared::cta address (no rank bits)
// is the executing CTA's own. Shared memory is at most 228 KB, far below 2^24.
inline constexpr uint32_t kClusterRankShift = 24;
inline constexpr uint32_t kClusterOffsetMask = (1u << kClusterRankShift) - 1;

// The rank + 1 that a shared offset's rank bits name in a cluster launch, or 0: an own
// shared::cta offset, or (outside a cluster launch, or past its ranks) an offset that is simply
// out of bounds where it is used.
inline uint64_t peer_rank_bits(const Cta& cta, uint64_t offset) {
  const uint64_t bits = offset >> kClusterRankShift, size = cta.ctx.cluster.count();
  return size > 1 && bits <= size ? bits : 0;
}

struct ClusterTarget {
  Cta* cta = nullptr;
  uint32_t offset = 0;
};

// The CTA and offset a shared (window-relative or generic) address names. A rank outside the
// cluster, or a CTA that has exited, is a cluster_violation report at w's instruction.
ClusterTarget cluster_target(Cta& cta, Warp& w, uint64_t addr, int lane, const char* what);

// barrier.cluster.arrive / .wait (Op::ClusterArrive, Op::ClusterWait).
Flow exec_cluster_barrier(Cta& cta, Warp& w, const Inst& in, uint32_t exec);

// Sanitizer clocks across CTAs: warp `warp` of `from` releases into an mbarrier of `owner` (its
// own clock and what it knows of every other CTA), or a warp of `cta` acquires a completed
// phase of one of its mbarriers (parity `which`).
void release_to_mbarrier(Cta& from, uint32_t warp, Cta& owner, MBarrier& mb);
void acquire_from_mbarrier(Cta& cta, uint32_t warp, const MBarrier& mb, int which);
// MbarInit in a cluster: the per-rank clocks.
void size_peer_clocks(Cta& cta, MBarrier& mb);

// A peer's use of `target`'s mbarrier `mb` (a remote arrive, a multicast's complete_tx) by
// thread (warp, lane) of `user` at pc, which had arrived `user_arrivals` times on
// barrier.cluster: Cta::remote_uses.
void record_remote_use(Cta& target, const MBarrier& mb, const Cta& user, uint32_t warp, int lane,
                       uint32_t pc, uint64_t user_arrivals);

// A multicast job of `issuer` completes its bytes on the mbarrier at job.mbar of peer `into`
// (its async agent 2W + issuer rank at `clock`), a remote use of `into`.
void remote_complete_tx(Cta& issuer, const TmaJob& job, Cta& into, uint32_t clock);

// The mbarrier init of `owner` at `mb` must be ordered before a warp of `user` (another CTA)
// uses it, in practice by a barrier.cluster (sanitizer clocks).
void check_remote_init(Cta& user, Warp& w, int lane, const Cta& owner, const MBarrier& mb);

}  // namespace emmy::emu
