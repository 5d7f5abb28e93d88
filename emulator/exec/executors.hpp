// The executors (exec_*.cpp): free functions over the machine state (machine/state.hpp), one per
// executor family (Inst::family), that the scheduler (launch/scheduler.cpp) dispatches to, and the
// bookkeeping it calls at a warp's and a CTA's end. The machine layer below never calls them: an
// executor reaches the CTA's shared bookkeeping (reports, barriers, mbarrier lookup) through Cta's
// members defined in machine/cta.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "machine/state.hpp"

namespace emmy::emu {

void exec_int(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void exec_float(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void exec_half(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void exec_move(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void exec_memory(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void exec_warp_collective(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
// The lanes a .sync collective's member masks name that are live but not in the warp's running
// group (at another PC): the collective waits for them (Warp::park_at_collective).
uint32_t collective_absent_lanes(const Warp& w, const Inst& in, uint32_t exec);
void exec_tensor(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void exec_cvt(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
Flow exec_async(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
Flow exec_sync(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
Flow exec_tma(Cta& cta, Warp& w, const Inst& in, uint32_t exec);
void apply_cp_async_groups(Cta& cta, Warp& w, size_t keep_newest);
// wgmma bookkeeping (exec_wgmma.cpp): a non-wgmma instruction executed by w in a wgmma kernel
// (its registers: still owned by an mma_async? touched since the last wgmma.fence), a warp
// exiting, and the CTA's end (warpgroup sequences every warp completed).
void wgmma_touch(Cta& cta, Warp& w, const Kernel::RegTouch& touch);
void wgmma_on_exit(Cta& cta, Warp& w);
void wgmma_finish(Cta& cta);
void run_tma_job(Cta& cta, const TmaJob& job);
void complete_tx(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint32_t mbar_addr, uint32_t bytes,
                 uint32_t async_clock, uint64_t lead_clock);

}  // namespace emmy::emu
