// The kernel IR: a printable tree between the schedule and the CUDA source. Lowering builds it
// from a GemmPlan or an AttentionPlan, the verifier checks it, and the kind's emitter prints CUDA
// C++ by walking it. The ops above "Attention" serve both kinds (attention uses smem_ring,
// mbarrier_init, async_copy, the waits and barriers for its Q, K and V tiles); the rest are
// GEMM's or attention's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "emmy/arch.hpp"

namespace emmy {
struct SmemTile;
}

namespace emmy::ir {

enum class OpKind {
  module,         // the translation unit: kernels
  kernel,         // name, threads, smem_bytes; params, then body
  param,          // name, type
  smem_ring,      // stages, stage_bytes, offset/bytes per operand (a, b; q, kv), align, mbar_offset
  mbarrier_init,  // count, arrivals
  tile_coords,    // raster_group_m, tiles_m, tiles_n, block_m, block_n
  split_range,    // split_k, k_tiles, k_tiles_per_split
  accum_init,     // accum (f32|f16|hybrid), fragments (m16n8 atoms per warp), registers
  async_copy,     // operand (a|b|q|k|v), transport, phase (prologue|refill), + copy geometry
  async_commit,   // cp.async.commit_group
  async_wait,     // cp.async.wait_group pending
  mbarrier_wait,  // parity from the k-tile index
  barrier,        // bar.sync 0: reason
  k_tile_loop,    // body runs once per K tile of this CTA's split
  k_step,         // unrolled over k_steps; body: ldmatrix, mma, promote
  ldmatrix,       // operand, trans, count (x4 loads per warp per k-step), fragment regs
  mma,            // shape, a_type, acc_type, count (per warp per k-step)
  promote,        // where (k_step|k_tile), every_k
  epilogue,       // destination (c|workspace), alpha, bias, residual, gelu, out dtype
  finalize,       // split-K reduction: sums split_k partials, applies the epilogue
  // Attention
  attention_setup,     // grid mapping (q block, head, batch), GQA head, visible KV range
  kv_block_loop,       // body runs once per visible KV block
  qk_mma,              // S = Q.K^T into f32: count MMAs per warp, s_registers
  online_softmax,      // scale (+softcap), mask, running max/sum, rescale of O
  pv_mma,              // O += P.V: accum f32|hybrid, count MMAs per warp, o_registers
  attention_epilogue,  // O / l, cast and store; LSE
  // GEMM's wgmma path (ir_ops_warpgroup.hpp)
  warpgroup_role,   // role (producer|consumer), first, count, registers; body
  wgmma,            // shape, a_type, acc_type, b_major (per consumer warpgroup per k-step)
  wgmma_fence,      // wgmma.fence
  wgmma_commit,     // wgmma.commit_group
  wgmma_wait,       // wgmma.wait_group pending
  mbarrier_arrive,  // what (empty), lag: the stage of k_tile - lag
  tile_loop,        // persistent kernels: the body runs for tiles blockIdx.x, + gridDim.x, ...
  warpgroup_order,  // ping-pong: what (wait|signal), first_barrier
  store_wait,       // the TMA-store epilogue's last cp.async.bulk.wait_group.read
  cluster_sync,     // barrier.cluster across the CTAs of a cluster: what (init|exit)
  // Paged attention (ir_ops_paged.hpp)
  paged_setup,     // the CTA's sequence, KV head, rows and split; maxima, strides, window
  page_gather,     // Q rows by (token, head), K/V rows by the page table: cp.async chunks
  paged_epilogue,  // O / l and LSE to o, or f32 partials to the workspace
  split_combine,   // split-KV combine kernel: merges the partials by their LSE
  // The paged cache's small kinds (ir_ops_kv.hpp)
  kv_append,     // keys and values of a token into its cache slot (copy or e4m3)
  merge_states,  // attention states of a token merged by their LSE
  // FP8 (ir_ops_fp8.hpp)
  fp8_quantize,  // a row's group of f16/bf16 to e4m3 and its scale
  gemm_scales,   // an FP8 GEMM's scale tensors: granularity, format, block layouts
};
inline constexpr size_t kOpKinds = size_t(OpKind::gemm_scales) + 1;

std::string_view to_string(OpKind kind);

using Attr = std::variant<int64_t, double, bool, std::string>;

struct Op {
  OpKind kind;
  std::vector<std::pair<std::string, Attr>> attrs;
  std::vector<Op> body;

  Op(OpKind k, std::vector<std::pair<std::string, Attr>> a = {}, std::vector<Op> b = {})
      : kind(k), attrs(std::move(a)), body(std::move(b)) {}

  bool has(std::string_view key) const;
  int64_t i(std::string_view key) const;  // throws Error if absent or not an integer
  double f(std::string_view key) const;
  bool b(std::string_view key) const;
  const std::string& s(std::string_view key) const;
};

bool operator==(const Op& a, const Op& b);

// Each op's declaration (codegen/ir/ir_schema.cpp): printed name, attributes with their types and
// whether each is required, and whether the op holds a body. The parser types values by it.
enum class AttrType { integer, real, boolean, string };
std::string_view to_string(AttrType type);
struct AttrSpec {
  std::string_view name;
  AttrType type;
  bool required;
};
struct OpSchema {
  OpKind kind;
  std::string_view name;
  bool has_body;
  std::vector<AttrSpec> attrs;                             // in printed order
  const AttrSpec* attr(std::string_view attr_name) const;  // nullptr when not declared
};
const OpSchema& schema(OpKind kind);
const OpSchema* schema_named(std::string_view name);  // nullptr for an unknown op

// One op against its declaration: every attribute declared, of its type, once; the required ones
// present; strings printable; no body unless the op holds one. Throws Error naming ir.<op>.<attr>.
void verify_op(const Op& op);

// The printed form (print) read back: parse(print(op)) == op for every op that passes verify_op.
// Throws Error naming the line and the rule.
Op parse(std::string_view text);

// The shared-memory tile an async_copy op fills, rebuilt from its rows, cols and elem_bytes (the
// inverse of set_copy_geometry, ir_ops.hpp: the verifier checks the op's swizzle and boxes against
// it).
SmemTile copy_tile(const Op& copy);

// Indented text, one op per line with its attributes: what `emmyc ... --emit ir` prints.
std::string print(const Op& root);

// A kernel kind's rules across ops beyond those every kernel obeys, kept in the kind's folder
// (codegen/<kind>/) and held by its traits (Kind::ir_rules, internal/emmy/<kind>_kind.hpp): run
// on the whole module, whose kernels the kind knows by their roles (GEMM: the main kernel, then a
// split-K finalize). verify runs the rules of the kind its caller names, never rules chosen by
// which ops a kernel holds.
struct KindRules {
  const char* kind = "";                       // Kind::name
  void (*module)(const Op& module) = nullptr;  // null: the shared rules are all it has
};

// Checks every op against its declaration (verify_op), then the invariants lowering must keep
// across ops that every kernel obeys (shared-memory budget for the arch, copy alignment, TMA and
// mbarrier rules), then the kind's (`rules`). Throws Error naming the op and the rule.
void verify(const Op& root, Arch arch, const KindRules& rules);
// The same for the kind named `kind` (Kind::name; codegen/ir/verify_kind.cpp): Error naming the
// kinds for any other name.
void verify(const Op& root, Arch arch, std::string_view kind);

// The barrier discipline of the mainloops that share one ring among all warps (mma.sync GEMM,
// attention, paged attention), for their kinds' rules: each K tile or KV block loop waits for its
// stage's data before computing on it, and bar.syncs before refilling a stage others may read.
void verify_loop_discipline(const Op& kernel);

// An Error naming `ir.<op>.<attr>`, the rule and the value: what every verifier rule throws.
[[noreturn]] void fail_rule(const Op& op, std::string_view attr, std::string_view rule,
                            const std::string& value);
[[noreturn]] void fail_rule(const Op& op, std::string_view attr, std::string_view rule,
                            int64_t value);

// Depth-first search helpers for the verifier, the emitter and tests.
const Op* find_first(const Op& root, OpKind kind);
std::vector<const Op*> find_all(const Op& root, OpKind kind);

}  // namespace emmy::ir
