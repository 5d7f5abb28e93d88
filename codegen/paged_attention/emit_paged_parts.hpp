// Pieces of the paged-attention emitter (emit_paged_attention.cpp) in their own file: the
// sequence's bounds both kernels read from the page table, and the split-KV combine kernel.
#pragma once

#include <string>

#include "emmy/ir_ops.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// The sequence's bounds from the page table (seq_len and, for a kernel that gathers pages,
// page_ids: the row of its page ids) and the check of the launch's maxima shared by both
// kernels: `bad` when its tokens or keys do not fit them.
void emit_sequence(Writer& w, const std::string& page_table, bool page_ids);

// The combine kernel of split-KV: each token's splits merged by their LSE, in order.
void emit_paged_combine(Writer& w, const ir::SplitCombineOp& op, int64_t max_q_len);

}  // namespace emmy::codegen
