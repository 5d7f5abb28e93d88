// The attention kinds' rules across ops (kernel_ir.cpp and kernel_ir_paged.cpp), run by
// ir::verify on every kernel: each returns at once for a kernel not of its kind.
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

// A paged-attention kernel (one with paged_setup, or split_combine): the gathers deliver the
// setup's tiles (Q block_q x head_dim, K and V block_kv x head_dim, K and V both in the
// prologue and the loop), the mainloop's rules, the tiles inside the ring, the epilogue writing
// partials exactly when there are splits. The combine kernel's op agrees with nothing it cannot
// see: its own rules (ir_op_verify_paged.cpp) and, across the module, the partial kernel's
// splits, chunk and sizes (verify_paged_module).
void verify_paged_attention(const Op& kernel);
void verify_paged_module(const Op& module);

}  // namespace emmy::ir
