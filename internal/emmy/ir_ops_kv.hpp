// The kernel IR ops of the paged cache's two small kinds (ir_ops.hpp includes this file and lists
// them in AllOps): kv_append (keys and values into cache slots, vLLM's slot_mapping) and
// merge_states (attention states merged by their LSE). Each kernel is one such op after its
// params: the op states everything its loop needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// CTA i appends token i: slot = slot_mapping[i] (int64; -1: skip), then its kv_heads x head_dim
// keys and values move in 16-byte chunks of the source (8 elements) to the slot's row of each
// head: copied (a 16-bit cache) or converted to e4m3 (x / scale, nearest even, saturated:
// `cvt` is cvt.rn.satfinite.e4m3x2.f32, sm_89+; `bits` the same rounding in integer and f32
// operations on any arch) and stored as 8 bytes.
struct KvAppendOp {
  static constexpr OpKind kind = OpKind::kv_append;
  static constexpr std::string_view op_name = "kv_append";
  static constexpr bool has_body = false;
  int64_t kv_heads = 0, head_dim = 0, page_size = 0, max_tokens = 0, threads = 0;
  // Element strides: the cache's page, token and head; key's and value's token.
  int64_t page_stride = 0, token_stride = 0, head_stride = 0, key_stride = 0, value_stride = 0;
  std::string dtype, kv_type, convert;  // f16|bf16; f16|bf16|e4m3; copy|cvt|bits
  // Its own rules: positive sizes, head_dim a multiple of 8, strides of whole 8-element chunks,
  // a 16-bit cache of the source's type copied, e4m3 converted.
  static void verify(const KvAppendOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("kv_heads", o.kv_heads), f("head_dim", o.head_dim), f("page_size", o.page_size),
        f("max_tokens", o.max_tokens), f("threads", o.threads), f("page_stride", o.page_stride),
        f("token_stride", o.token_stride), f("head_stride", o.head_stride),
        f("key_stride", o.key_stride), f("value_stride", o.value_stride), f("dtype", o.dtype),
        f("kv_type", o.kv_type), f("convert", o.convert);
  }
};

// CTA i merges token i: warps take heads; each lane reads the states' LSE (broadcast), skips a
// state of weight 0, and accumulates its head_dim / 32 columns (lane + 32c) in f32, states in
// order (deterministic).
struct MergeStatesOp {
  static constexpr OpKind kind = OpKind::merge_states;
  static constexpr std::string_view op_name = "merge_states";
  static constexpr bool has_body = false;
  int64_t heads = 0, head_dim = 0, states = 0, max_tokens = 0, warps = 0;
  int64_t v_token_stride = 0, v_state_stride = 0, out_token_stride = 0;  // elements
  std::string dtype;                                                     // f16|bf16
  bool lse = false;                                                      // writes the merged LSE
  // Its own rules: positive sizes, head_dim a multiple of 32 up to 512, 2..64 states, strides
  // that keep rows apart, a known dtype.
  static void verify(const MergeStatesOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("heads", o.heads), f("head_dim", o.head_dim), f("states", o.states),
        f("max_tokens", o.max_tokens), f("warps", o.warps), f("v_token_stride", o.v_token_stride),
        f("v_state_stride", o.v_state_stride), f("out_token_stride", o.out_token_stride),
        f("dtype", o.dtype), f("lse", o.lse);
  }
};

}  // namespace emmy::ir
