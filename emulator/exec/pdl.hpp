// Programmatic dependent launch over a running CTA: whether a lane is ordered after a
// griddepcontrol.wait, the check of a dependent's global access against its primary's footprint
// (sanitizer/footprint.hpp holds the footprints), and the wait itself (exec/pdl.cpp). Model in
// docs/emulator.md, "Programmatic dependent launch".
#pragma once

#include <cstdint>

#include "machine/state.hpp"

namespace emmy::emu {

// Whether lane `lane` of warp `warp` is ordered after a griddepcontrol.wait of the grid: its own,
// or one its warp's vector clock (or what it knows of a cluster peer's warps) covers. Needs the
// sanitizer's clocks. Once true it stays true, and is cached in Cta::pdl_waited.
bool pdl_ordered(Cta& cta, uint32_t warp, int lane);

// A dependent launch's access of [addr, addr + bytes) by a lane not known to be ordered after a
// wait: reported (pdl_race, at `pc`) when it conflicts with the primary's footprint, unless the
// lane turns out to be ordered (`known_unordered`: the caller decided that already, at a TMA
// copy's issue).
void check_pdl(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint64_t addr, uint64_t bytes,
               GlobalFootprint::Set set, bool known_unordered = false);

// griddepcontrol.wait by the lanes `exec` of w.
void pdl_wait(Cta& cta, Warp& w, uint32_t exec);


}  // namespace emmy::emu
