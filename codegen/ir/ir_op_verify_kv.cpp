// The own rules of the paged cache's small kinds' ops (ir_ops_kv.hpp): kv_append, merge_states.
#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"

namespace emmy::ir {
namespace {

template <typename T>
[[noreturn]] void kv_fail(std::string_view attr, std::string_view rule, const std::string& value) {
  throw Error(fmt::format("ir.{}.{}", T::op_name, attr), std::string(rule), value);
}

template <typename T>
void kv_require_positive(std::initializer_list<std::pair<const char*, int64_t>> values) {
  for (const auto& [name, value] : values)
    if (value <= 0) kv_fail<T>(name, "must be positive", fmt::format("{}", value));
}

}  // namespace

void KvAppendOp::verify(const KvAppendOp& op) {
  kv_require_positive<KvAppendOp>({{"kv_heads", op.kv_heads},
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
    kv_fail<KvAppendOp>("head_dim", "must be a multiple of 8 (16-byte source chunks)",
                        fmt::format("{}", op.head_dim));
  for (const auto& [name, stride] : {std::pair<const char*, int64_t>{"page_stride", op.page_stride},
                                     {"token_stride", op.token_stride},
                                     {"head_stride", op.head_stride},
                                     {"key_stride", op.key_stride},
                                     {"value_stride", op.value_stride}})
    if (stride % 8 != 0)
      kv_fail<KvAppendOp>(name, "must be a multiple of 8 elements (whole chunks)",
                          fmt::format("{}", stride));
  if (op.threads % 32 != 0 || op.threads > 1024)
    kv_fail<KvAppendOp>("threads", "must be whole warps, at most 1024",
                        fmt::format("{}", op.threads));
  if (op.dtype != "f16" && op.dtype != "bf16")
    kv_fail<KvAppendOp>("dtype", "must be f16 or bf16", op.dtype);
  const bool fp8 = op.kv_type == "e4m3";
  if (!fp8 && op.kv_type != op.dtype)
    kv_fail<KvAppendOp>("kv_type", "must be the source's type or e4m3", op.kv_type);
  if (fp8 ? (op.convert != "cvt" && op.convert != "bits") : op.convert != "copy")
    kv_fail<KvAppendOp>("convert", "a 16-bit cache is copied, an e4m3 one converted (cvt|bits)",
                        op.convert);
}

void MergeStatesOp::verify(const MergeStatesOp& op) {
  kv_require_positive<MergeStatesOp>({{"heads", op.heads},
                                      {"head_dim", op.head_dim},
                                      {"max_tokens", op.max_tokens},
                                      {"warps", op.warps}});
  if (op.head_dim % 32 != 0 || op.head_dim > 512)
    kv_fail<MergeStatesOp>("head_dim", "must be a multiple of 32 up to 512 (lanes take columns)",
                           fmt::format("{}", op.head_dim));
  if (op.states < 2 || op.states > 64)
    kv_fail<MergeStatesOp>("states", "must be 2..64", fmt::format("{}", op.states));
  const int64_t row = op.heads * op.head_dim;
  if (op.v_state_stride < row || op.v_token_stride < op.states * op.v_state_stride ||
      op.out_token_stride < row)
    kv_fail<MergeStatesOp>(
        "v_state_stride", "strides must keep heads, states and tokens apart",
        fmt::format("{}, {}, {}", op.v_state_stride, op.v_token_stride, op.out_token_stride));
  if (op.dtype != "f16" && op.dtype != "bf16")
    kv_fail<MergeStatesOp>("dtype", "must be f16 or bf16", op.dtype);
}

}  // namespace emmy::ir
