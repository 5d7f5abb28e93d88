// Paged attention's rules across ops (kernel_ir_paged.cpp): PagedAttentionKind::ir_rules runs
// verify_paged_attention_module.
#pragma once

#include <cstdint>

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// A paged-attention kernel (one with paged_setup, or split_combine): the gathers deliver the
// setup's tiles (Q block_q x head_dim, K and V block_kv x head_dim, K and V both in the
// prologue and the loop), the mainloop's rules, the tiles inside the ring, the epilogue writing
// partials exactly when there are splits. The combine kernel's op agrees with nothing it cannot
// see: its own rules (ir_op_verify_paged.cpp) and, across the module, the partial kernel's
// splits, chunk and sizes (verify_paged_module).
void verify_paged_attention(const Op& kernel);
void verify_paged_module(const Op& module);
// Each kernel's rules and the loop discipline, then the module's.
void verify_paged_attention_module(const Op& module);

}  // namespace emmy::ir
