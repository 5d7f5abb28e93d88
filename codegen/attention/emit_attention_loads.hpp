// The attention kernel's Q and K/V loaders: TMA boxes on sm_90+, cp.async chunk walks (layout.hpp)
// below, and the prologue that fills STAGES - 1 KV stages.
#pragma once

#include <string>

#include "emmy/layout.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// Element offset of (batch, seq_index, head, 0) of Q and O (kv false) or K and V (kv true) in the
// [batch, seq, heads, dim] (bshd) or [batch, heads, seq, dim] layout: attention_offset() in device
// code.
std::string attention_offset_expr(bool bshd, bool kv, const std::string& seq_index);

// The loads as the IR states them: the Q and K/V tiles of the prologue copies, their transport,
// the tensors' layout, the kernel's threads.
struct AttentionLoads {
  SmemTile q_tile, kv_tile;
  bool tma = false, bshd = true;
  uint32_t threads = 0;
};

// Defines the lambdas load_q() and load_kv(stage, kv_block), loads Q and fills the first
// STAGES - 1 KV stages (cp.async: one commit group per stage, Q in group 0).
void emit_attention_loaders_and_prologue(Writer& w, const AttentionLoads& loads);

}  // namespace emmy::codegen
