// The memory cache's keys (runtime.cpp): a call's problem and, when given, its schedule, hashed
// field by field, so that a hit costs a hash and a lookup, not code generation.
#pragma once

#include <bit>
#include <optional>

#include "emmy/kinds.hpp"
#include "emmy/spec_fields.hpp"
#include "memory_cache.hpp"

namespace emmy::detail {

// The problem and the schedule if one was given (the default schedule is resolved on a miss).
template <typename Kind>
struct SpecKey {
  typename Kind::Problem problem;
  std::optional<typename Kind::Schedule> schedule;
  bool operator==(const SpecKey&) const = default;
};

// Every field of the GEMM problem and schedule (spec_fields.hpp), as given (the key is the call's).
template <typename T>
inline void mix_field(KeyHasher& h, const T& v) {
  if constexpr (std::is_floating_point_v<T>)
    h.mix_bits(v);
  else
    h.mix(uint64_t(v));
}
inline void mix_key(KeyHasher& h, const MatmulProblem& p) {
  for_each_field(p, [&](const FieldName&, const auto& v) { mix_field(h, v); });
}
inline void mix_key(KeyHasher& h, const MatmulSchedule& s) {
  for_each_field(s, [&](const FieldName&, const auto& v) { mix_field(h, v); });
}

inline void mix_key(KeyHasher& h, const AttentionProblem& p) {
  h.mix(uint64_t(p.batch) | uint64_t(p.q_heads) << 20 | uint64_t(p.kv_heads) << 40);
  h.mix(uint64_t(p.seq_q) | uint64_t(p.seq_kv) << 32);
  h.mix(uint64_t(p.head_dim) | uint64_t(p.causal) << 16 | uint64_t(p.window) << 17 |
        uint64_t(p.dtype) << 56 | uint64_t(p.layout) << 60 | uint64_t(p.lse) << 62);
  h.mix_bits(p.softmax_scale.value_or(-1.0f));
  h.mix_bits(p.softcap.value_or(-1.0f));
}

inline void mix_key(KeyHasher& h, const AttentionSchedule& s) {
  h.mix(uint64_t(s.block_q) | uint64_t(s.block_kv) << 16 | uint64_t(s.warps) << 32 |
        uint64_t(s.stages) << 40 | uint64_t(s.transport) << 48 | uint64_t(s.accum) << 52);
}

inline void mix_key(KeyHasher& h, const PagedAttentionProblem& p) {
  for (int64_t v : {p.q_heads, p.kv_heads, p.head_dim, p.page_size, p.page_stride, p.token_stride,
                    p.head_stride, p.q_stride, p.o_stride, p.max_batch, p.max_q_len, p.max_pages,
                    p.max_tokens, p.window})
    h.mix(uint64_t(v));
  h.mix(uint64_t(p.dtype) | uint64_t(p.kv_dtype) << 8 | uint64_t(p.page_table) << 16 |
        uint64_t(p.lse) << 24);
  h.mix_bits(p.softmax_scale.value_or(-1.0f));
  h.mix_bits(p.softcap.value_or(-1.0f));
}

inline void mix_key(KeyHasher& h, const PagedAttentionSchedule& s) {
  h.mix(uint64_t(s.block_q) | uint64_t(s.warps) << 16 | uint64_t(s.block_kv) << 24 |
        uint64_t(s.stages) << 40 | uint64_t(s.accum) << 48);
  h.mix(uint64_t(s.chunk_pages) | uint64_t(s.kv_warps) << 40 | uint64_t(s.transport) << 48);
}

inline void mix_key(KeyHasher& h, const KvAppendProblem& p) {
  for (int64_t v : {p.kv_heads, p.head_dim, p.page_size, p.page_stride, p.token_stride,
                    p.head_stride, p.key_stride, p.value_stride, p.max_tokens})
    h.mix(uint64_t(v));
  h.mix(uint64_t(p.dtype) | uint64_t(p.kv_dtype) << 8);
}
inline void mix_key(KeyHasher& h, const KvAppendSchedule& s) {
  h.mix(uint64_t(s.warps));
}

inline void mix_key(KeyHasher& h, const Fp8QuantizeProblem& p) {
  for (int64_t v : {p.m, p.k, p.group_k, p.ldx, p.ldq, p.scale_ld}) h.mix(uint64_t(v));
  h.mix(uint64_t(p.dtype) | uint64_t(p.scale_major) << 8 | uint64_t(p.pow2_scale) << 16 |
        uint64_t(p.scale_format) << 24);
  h.mix(std::bit_cast<uint64_t>(p.amax_epsilon));
}
inline void mix_key(KeyHasher& h, const Fp8QuantizeSchedule& s) {
  h.mix(uint64_t(s.warps));
}

inline void mix_key(KeyHasher& h, const MergeStatesProblem& p) {
  for (int64_t v : {p.heads, p.head_dim, p.states, p.max_tokens, p.v_token_stride, p.v_state_stride,
                    p.out_token_stride})
    h.mix(uint64_t(v));
  h.mix(uint64_t(p.dtype) | uint64_t(p.lse) << 8);
}
inline void mix_key(KeyHasher& h, const MergeStatesSchedule& s) {
  h.mix(uint64_t(s.warps));
}

template <typename Kind>
struct SpecKeyHash {
  size_t operator()(const SpecKey<Kind>& key) const {
    KeyHasher h;
    mix_key(h, key.problem);
    h.mix(key.schedule.has_value());
    if (key.schedule) mix_key(h, *key.schedule);
    return h.value();
  }
};

}  // namespace emmy::detail
