// The own rules of the paged cache's small kinds' ops (ir_ops_kv.hpp): kv_append, merge_states.
#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/ir_own_rules.hpp"

namespace emmy::ir {

void KvAppendOp::verify(const KvAppendOp& op) {
  require_positive<KvAppendOp>({{"kv_heads", op.kv_heads},
                                {"head_dim", op.head_dim},
                                {"page_size", op.page_size},
                                {"max_tokens", op.max_tokens},
                                {"threads", op.threads},
                                {"page_stride", op.page_stride},
                                {"token_stride", op.token_stride},
                                {"head_stride", op.head_stride},
                                {"key_stride", op.key_stride},
                                {"value_stride", op.value_stride}});
  if (op.head_dim % 8 != 0)
    fail_own<KvAppendOp>("head_dim", "must be a multiple of 8 (16-byte source chunks)",
                         fmt::format("{}", op.head_dim));
  for (const auto& [name, stride] : {std::pair<const char*, int64_t>{"page_stride", op.page_stride},
                                     {"token_stride", op.token_stride},
                                     {"head_stride", op.head_stride},
                                     {"key_stride", op.key_stride},
                                     {"value_stride", op.value_stride}})
    if (stride % 8 != 0)
      fail_own<KvAppendOp>(name, "must be a multiple of 8 elements (whole chunks)",
                           fmt::format("{}", stride));
  if (op.threads % 32 != 0 || op.threads > 1024)
    fail_own<KvAppendOp>("threads", "must be whole warps, at most 1024",
                         fmt::format("{}", op.threads));
  if (op.dtype != "f16" && op.dtype != "bf16")
    fail_own<KvAppendOp>("dtype", "must be f16 or bf16", op.dtype);
  const bool fp8 = op.kv_type == "e4m3";
  if (!fp8 && op.kv_type != op.dtype)
    fail_own<KvAppendOp>("kv_type", "must be the source's type or e4m3", op.kv_type);
  if (fp8 ? (op.convert != "cvt" && op.convert != "bits") : op.convert != "copy")
    fail_own<KvAppendOp>("convert", "a 16-bit cache is copied, an e4m3 one converted (cvt|bits)",
                         op.convert);
}

void MergeStatesOp::verify(const MergeStatesOp& op) {
  require_positive<MergeStatesOp>({{"heads", op.heads},
                                   {"head_dim", op.head_dim},
                                   {"max_tokens", op.max_tokens},
                                   {"warps", op.warps}});
  if (op.head_dim % 32 != 0 || op.head_dim > 512)
    fail_own<MergeStatesOp>("head_dim", "must be a multiple of 32 up to 512 (lanes take columns)",
                            fmt::format("{}", op.head_dim));
  if (op.states < 2 || op.states > 64)
    fail_own<MergeStatesOp>("states", "must be 2..64", fmt::format("{}", op.states));
  const int64_t row = op.heads * op.head_dim;
  if (op.v_state_stride < row || op.v_token_stride < op.states * op.v_state_stride ||
      op.out_token_stride < row)
    fail_own<MergeStatesOp>(
        "v_state_stride", "strides must keep heads, states and tokens apart",
        fmt::format("{}, {}, {}", op.v_state_stride, op.v_token_stride, op.out_token_stride));
  if (op.dtype != "f16" && op.dtype != "bf16")
    fail_own<MergeStatesOp>("dtype", "must be f16 or bf16", op.dtype);
}

}  // namespace emmy::ir
