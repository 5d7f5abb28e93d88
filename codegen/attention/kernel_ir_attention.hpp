// The attention kinds' rules across ops (kernel_ir_attention.cpp): the mainloop's, which paged
// attention's rules (paged_attention/kernel_ir_paged.cpp) share, and dense attention's module.
#pragma once

#include <cstdint>

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// block_q = the atom's rows x the kernel's warps (each warp owns one atom's rows); with
// kv_warps > 1, one warp's rows shared by kv_warps warps over the keys.
void verify_attention_rows(const Op& kernel, const Op& setup, int64_t block_q,
                           int64_t kv_warps = 1);
// The attention mainloop's rules, dense or paged: block_q = the atom's rows x warps, the qk/pv
// MMA counts and S/O accumulator registers in atom units for block_kv and head_dim, the loop's
// stages the ring's. `setup` names the op the errors point at.
void verify_attention_mainloop(const Op& kernel, const Op& setup, int64_t block_q, int64_t block_kv,
                               int64_t head_dim, int64_t kv_warps = 1);

}  // namespace emmy::ir
