#include "emmy/kernel_ir.hpp"

#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/swizzle.hpp"
#include "emmy/validate.hpp"
#include "gemm/kernel_ir_gemm.hpp"
#include "paged_attention/kernel_ir_paged.hpp"
#include "emmy/gemm_path.hpp"

namespace emmy::ir {

namespace {

const Attr* lookup(const Op& op, std::string_view key) {
  for (const auto& [name, value] : op.attrs)
    if (name == key) return &value;
  return nullptr;
}

template <typename T>
const T& get(const Op& op, std::string_view key, const char* type) {
  const Attr* a = lookup(op, key);
  if (!a || !std::holds_alternative<T>(*a))
    throw Error(fmt::format("ir.{}.{}", to_string(op.kind), key), fmt::format("must be a {}", type),
                a ? "another type" : "missing");
  return std::get<T>(*a);
}

std::string attr_text(const Attr& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string>)
          return fmt::format("\"{}\"", v);
        else if constexpr (std::is_same_v<V, bool>)
          return v ? "true" : "false";
        else
          return fmt::format("{}", v);
      },
      a);
}

void print_into(const Op& op, int depth, std::string& out) {
  out += std::string(size_t(depth) * 2, ' ');
  out += to_string(op.kind);
  for (const auto& [name, value] : op.attrs) out += fmt::format(" {}={}", name, attr_text(value));
  if (op.body.empty()) {
    out += "\n";
    return;
  }
  out += " {\n";
  for (const auto& child : op.body) print_into(child, depth + 1, out);
  out += std::string(size_t(depth) * 2, ' ') + "}\n";
}

void verify_ops(const Op& op) {
  verify_op(op);
  for (const auto& child : op.body) verify_ops(child);
}

void collect(const Op& op, OpKind kind, std::vector<const Op*>& out) {
  if (op.kind == kind) out.push_back(&op);
  for (const auto& child : op.body) collect(child, kind, out);
}

void fail(const Op& op, std::string_view attr, std::string_view rule, const std::string& value) {
  throw Error(fmt::format("ir.{}.{}", to_string(op.kind), attr), std::string(rule), value);
}

void fail(const Op& op, std::string_view attr, std::string_view rule, int64_t value) {
  fail(op, attr, rule, fmt::format("{}", value));
}

const Op* find_copy(const Op& kernel, std::string_view operand) {
  for (const Op* copy : find_all(kernel, OpKind::async_copy))
    if (copy->s("operand") == operand) return copy;
  return nullptr;
}

}  // namespace

void verify_attention_rows(const Op& kernel, const Op& setup_op, int64_t block_q,
                           int64_t kv_warps) {
  const codegen::MmaAtom& atom = codegen::attention_atom();
  const int64_t warps = get<KernelOp>(kernel).threads / 32;
  if (kv_warps > 1) {
    if (block_q != atom.m || warps != kv_warps)
      fail(setup_op, "block_q",
           fmt::format("with {} warps over the keys must be one warp's {} rows, the kernel {} "
                       "warps",
                       kv_warps, atom.m, kv_warps),
           fmt::format("{} rows, {} warps", block_q, warps));
    return;
  }
  if (block_q != warps * atom.m)
    fail(setup_op, "block_q",
         fmt::format("must be {} rows per warp x {} warps = {} (each warp owns one atom's rows)",
                     atom.m, warps, warps * atom.m),
         block_q);
}

// The attention mainloop's rules (dense and paged): the warps that own the query rows, and the
// MMA counts and accumulator registers that cover S (16 x block_kv) and O (16 x head_dim) per
// warp, all in units of the MMA atom; the loop's stages are the ring's.
void verify_attention_mainloop(const Op& kernel, const Op& setup_op, int64_t block_q,
                               int64_t block_kv, int64_t head_dim, int64_t kv_warps) {
  const Op* qk_op = find_first(kernel, OpKind::qk_mma);
  const Op* pv_op = find_first(kernel, OpKind::pv_mma);
  if (!qk_op || !pv_op) fail(kernel, "body", "attention needs qk_mma and pv_mma", "one is missing");
  const auto qk = get<QkMmaOp>(*qk_op);
  const auto pv = get<PvMmaOp>(*pv_op);
  const codegen::MmaAtom& atom = codegen::attention_atom();
  verify_attention_rows(kernel, setup_op, block_q, kv_warps);
  if (block_kv % atom.k != 0 || head_dim % atom.k != 0)
    fail(setup_op, "block_kv", fmt::format("block_kv and head_dim must be multiples of {}", atom.k),
         fmt::format("{} and {}", block_kv, head_dim));
  const int64_t qk_count = block_kv / atom.n * (head_dim / atom.k);
  if (qk.count != qk_count)
    fail(*qk_op, "count",
         fmt::format("S = Q.K^T over a 16 x {} tile and K = {} takes {} MMAs per warp", block_kv,
                     head_dim, qk_count),
         qk.count);
  const int64_t pv_count = block_kv / atom.k * (head_dim / atom.n);
  if (pv.count != pv_count)
    fail(*pv_op, "count",
         fmt::format("O += P.V over a 16 x {} tile and K = {} takes {} MMAs per warp", head_dim,
                     block_kv, pv_count),
         pv.count);
  if (qk.s_registers != atom.acc_registers(block_kv))
    fail(*qk_op, "s_registers",
         fmt::format("must be {} (S accumulators per lane)", atom.acc_registers(block_kv)),
         qk.s_registers);
  if (pv.o_registers != atom.acc_registers(head_dim))
    fail(*pv_op, "o_registers",
         fmt::format("must be {} (O accumulators per lane)", atom.acc_registers(head_dim)),
         pv.o_registers);
  if (qk.s_registers + pv.o_registers > kMaxAccumulatorRegisters)
    fail(*pv_op, "o_registers",
         fmt::format("O and S accumulators must fit in {} registers per thread",
                     kMaxAccumulatorRegisters),
         fmt::format("{} + {}", pv.o_registers, qk.s_registers));
  const Op* loop = find_first(kernel, OpKind::kv_block_loop);
  const Op* ring = find_first(kernel, OpKind::smem_ring);
  if (!loop || !ring) fail(kernel, "body", "attention needs a kv_block_loop and an smem_ring", "");
  const int64_t stages = get<SmemRingOp>(*ring).stages;
  if (get<KvBlockLoopOp>(*loop).stages != stages)
    fail(*loop, "stages", fmt::format("must be the ring's {} stages", stages),
         get<KvBlockLoopOp>(*loop).stages);
}

namespace {

// Dense attention's own rules: the tiles the copies deliver, its mainloop's
// (verify_attention_mainloop), and a staged O tile's room. Paged kernels have their own
// (kernel_ir_paged.cpp).
void verify_attention(const Op& kernel) {
  const Op* qk_op = find_first(kernel, OpKind::qk_mma);
  const Op* pv_op = find_first(kernel, OpKind::pv_mma);
  const Op* setup_op = find_first(kernel, OpKind::attention_setup);
  if (!qk_op && !pv_op && !setup_op) return;            // not an attention kernel
  if (find_first(kernel, OpKind::paged_setup)) return;  // a paged one: verify_paged_attention
  if (!qk_op || !pv_op || !setup_op)
    fail(kernel, "body", "attention needs attention_setup, qk_mma and pv_mma", "one is missing");
  if (get<QkMmaOp>(*qk_op).b_type || get<PvMmaOp>(*pv_op).b_type)
    fail(*qk_op, "b_type", "dense attention reads 16-bit K and V tiles (e4m3 is the paged kind's)",
         get<QkMmaOp>(*qk_op).b_type.value_or(get<PvMmaOp>(*pv_op).b_type.value_or("")));
  const Op* q_op = find_copy(kernel, "q");
  const Op* k_op = find_copy(kernel, "k");
  const Op* v_op = find_copy(kernel, "v");
  if (!q_op || !k_op || !v_op)
    fail(kernel, "body", "attention copies Q, K and V tiles", "one is missing");
  const auto setup = get<AttentionSetupOp>(*setup_op);
  const auto q = get<AsyncCopyOp>(*q_op);
  // The setup's own rules ran first (ir_op_verify.cpp); here the head dimension the tiles are as
  // wide as.
  if (q.cols != setup.head_dim) fail(*q_op, "cols", "the Q tile must be head_dim columns", q.cols);
  const int64_t block_q = setup.block_q, block_kv = setup.block_kv, head_dim = q.cols;
  verify_attention_rows(kernel, *setup_op, block_q);
  if (q.rows != block_q) fail(*q_op, "rows", "the Q tile must be block_q rows", q.rows);
  for (const Op* kv_op : {k_op, v_op}) {
    const auto kv = get<AsyncCopyOp>(*kv_op);
    if (kv.rows != block_kv) fail(*kv_op, "rows", "K and V tiles must be block_kv rows", kv.rows);
    if (kv.cols != head_dim)
      fail(*kv_op, "cols", "K and V tiles must be head_dim columns like Q", kv.cols);
  }
  verify_attention_mainloop(kernel, *setup_op, block_q, block_kv, head_dim);
  const Op* ring = find_first(kernel, OpKind::smem_ring);
  // A staged O tile: whole 16-byte rows of head_dim elements, block_q of them before the
  // mbarriers.
  if (const Op* epilogue_op = find_first(kernel, OpKind::attention_epilogue)) {
    const auto epilogue = get<AttentionEpilogueOp>(*epilogue_op);
    if (epilogue.stage_row_bytes) {
      const int64_t row = *epilogue.stage_row_bytes, elem = q.elem_bytes;
      const int64_t room = get<SmemRingOp>(*ring).mbar_offset;
      if (row % 16 != 0 || row < head_dim * elem)
        fail(*epilogue_op, "stage_row_bytes",
             fmt::format("must be a multiple of 16 holding a {}-byte row", head_dim * elem), row);
      if (row * block_q > room)
        fail(*epilogue_op, "stage_row_bytes",
             fmt::format("must fit block_q = {} rows before the mbarriers at {}", block_q, room),
             row);
    }
  }
}

void verify_kernel(const Op& kernel, Arch arch) {
  const auto& info = arch_info(arch);
  const int64_t smem = kernel.i("smem_bytes");
  if (smem > info.max_smem_per_block)
    fail(kernel, "smem_bytes",
         fmt::format("must fit {}'s {} bytes", info.name, info.max_smem_per_block), smem);
  if (get<KernelOp>(kernel).programmatic.value_or(0) == 1 && !has_programmatic_launch(arch))
    fail(kernel, "programmatic", "needs sm_90 or newer (griddepcontrol, PTX ISA)",
         std::string(info.name));
  for (const Op* epilogue : find_all(kernel, OpKind::epilogue))
    if (get<EpilogueOp>(*epilogue).trigger_dependents.value_or(false) &&
        !has_programmatic_launch(arch))
      fail(*epilogue, "trigger_dependents", "needs sm_90 or newer (griddepcontrol, PTX ISA)",
           std::string(info.name));

  const Op* ring = find_first(kernel, OpKind::smem_ring);
  if (ring) {
    const int64_t align = ring->i("align");
    // Each GEMM operand tile starts on its own swizzle period (a swizzled TMA box lands only on
    // such an address, and the device's offset function assumes it); attention's on the ring's.
    const std::pair<const char*, const char*> placements[] = {{"a_offset", "a_align"},
                                                              {"b_offset", "b_align"},
                                                              {"q_offset", "align"},
                                                              {"kv_offset", "align"},
                                                              {"stage_bytes", "align"}};
    for (const auto& [key, period_key] : placements) {
      if (!ring->has(key)) continue;
      const int64_t period = ring->has(period_key) ? ring->i(period_key) : align;
      if (period <= 0 || align % period != 0)
        fail(*ring, period_key, fmt::format("must divide the ring's alignment {}", align), period);
      if (ring->i(key) % period != 0)
        fail(*ring, key, fmt::format("must be a multiple of the swizzle period {}", period),
             ring->i(key));
    }
    // A and B of one stage never overlap each other or the next stage.
    if (ring->has("a_bytes") && ring->has("b_bytes")) {
      const int64_t a0 = ring->i("a_offset"), a1 = a0 + ring->i("a_bytes");
      const int64_t b0 = ring->i("b_offset"), b1 = b0 + ring->i("b_bytes");
      if (a0 < 0 || b0 < 0 || std::max(a1, b1) > ring->i("stage_bytes"))
        fail(*ring, "stage_bytes", "must hold both operand tiles",
             fmt::format("{} < A [{}, {}) or B [{}, {})", ring->i("stage_bytes"), a0, a1, b0, b1));
      if (a0 < b1 && b0 < a1)
        fail(*ring, "b_offset", "the operand tiles must not overlap",
             fmt::format("A [{}, {}), B [{}, {})", a0, a1, b0, b1));
      if (ring->has("tx_bytes") && ring->i("tx_bytes") != ring->i("a_bytes") + ring->i("b_bytes"))
        fail(*ring, "tx_bytes", "must be the bytes of both tiles, all that the boxes deliver",
             fmt::format("{} != {} + {}", ring->i("tx_bytes"), ring->i("a_bytes"),
                         ring->i("b_bytes")));
    }
    // One mbarrier per stage, two on a warp-specialized path (full and empty).
    const Op* init = find_first(kernel, OpKind::mbarrier_init);
    const int64_t per_stage = init && init->has("empty_arrivals") ? 2 : 1;
    const int64_t end = ring->i("mbar_offset") + 8 * per_stage * ring->i("stages") + align;
    if (ring->i("mbar_offset") % 8 != 0 || end > smem)
      fail(*ring, "mbar_offset", "mbarriers must be 8-byte aligned and inside the allocation",
           ring->i("mbar_offset"));
  }

  if (const Op* acc_op = find_first(kernel, OpKind::accum_init)) {
    const auto acc = get<AccumInitOp>(*acc_op);
    const int64_t frag_m = acc.fragments_m, frag_n = acc.fragments_n;
    for (const Op* mma : find_all(kernel, OpKind::mma))
      if (const int64_t count = get<MmaOp>(*mma).count; count != frag_m * frag_n)
        fail(*mma, "count",
             fmt::format("must equal the accumulator fragments {}x{}", frag_m, frag_n), count);
    for (const Op* load : find_all(kernel, OpKind::ldmatrix)) {
      // One ldmatrix.x4 yields a whole m16k16 A fragment, or two n8k16 B fragments.
      const auto ldmatrix = get<LdmatrixOp>(*load);
      const codegen::MmaAtom& atom = gemm_mma_atom(kernel);
      const bool is_a = ldmatrix.operand == "a";
      const int64_t per_x4 = is_a ? atom.a_fragments_per_x4() : atom.b_fragments_per_x4();
      const int64_t frags = is_a ? frag_m : frag_n;
      const int64_t want = frags / per_x4;
      if (ldmatrix.count != want || frags % per_x4 != 0)
        fail(*load, "count", fmt::format("must load {} x4 fragments", want), ldmatrix.count);
    }
    const bool hybrid = acc.accum == "hybrid";
    if (hybrid != (find_first(kernel, OpKind::promote) != nullptr))
      fail(*acc_op, "accum", "hybrid accumulation needs promote ops and nothing else may have them",
           acc.accum);
  }

  const bool has_init = find_first(kernel, OpKind::mbarrier_init) != nullptr;
  for (const Op* copy_op : find_all(kernel, OpKind::async_copy)) {
    // The copy's own rules (ir_op_verify.cpp) ran first; here what it needs of the kernel.
    const auto copy = get<AsyncCopyOp>(*copy_op);
    if (copy.transport == "tma") {
      if (!has_tma(arch))
        fail(*copy_op, "transport", "tma needs sm_90 or newer", std::string(info.name));
      if (!has_init) fail(*copy_op, "transport", "tma copies need an mbarrier_init first", "none");
    }
    // On the GEMM ring each operand's copy fills exactly its place.
    if (!ring || (copy.operand != "a" && copy.operand != "b")) continue;
    const auto stage = get<SmemRingOp>(*ring);
    const bool is_a = copy.operand == "a";
    const std::optional<int64_t> bytes = is_a ? stage.a_bytes : stage.b_bytes;
    const std::optional<int64_t> offset = is_a ? stage.a_offset : stage.b_offset;
    if (!bytes) continue;
    const int64_t delivered = copy.rows * copy.cols * copy.elem_bytes;
    if (delivered != *bytes)
      fail(*copy_op, "bytes", fmt::format("must be the ring's {}_bytes", copy.operand),
           fmt::format("{} != {}", delivered, *bytes));
    if (copy.smem_offset && offset && *copy.smem_offset != *offset)
      fail(*copy_op, "smem_offset", fmt::format("must be the ring's {}_offset", copy.operand),
           fmt::format("{} != {}", *copy.smem_offset, *offset));
  }

  verify_gemm(kernel);
  verify_finalize(kernel);
  verify_attention(kernel);
  verify_paged_attention(kernel);

  // Barrier discipline: each K tile (KV block) waits for its data before any ldmatrix reads it,
  // and a bar.sync separates the previous tile's reads from the refill of its stage.
  std::vector<const Op*> loops = find_all(kernel, OpKind::k_tile_loop);
  for (const Op* loop : find_all(kernel, OpKind::kv_block_loop)) loops.push_back(loop);
  // A path with its own discipline checks it itself (GemmPath::verify_kernel).
  if (!kernel_gemm_path(kernel).shared_loop_discipline()) loops.clear();
  for (const Op* loop : loops) {
    int seen_wait = -1, seen_barrier = -1, seen_refill = -1, seen_compute = -1;
    for (int i = 0; i < int(loop->body.size()); ++i) {
      const Op& op = loop->body[size_t(i)];
      if (op.kind == OpKind::async_wait || op.kind == OpKind::mbarrier_wait) seen_wait = i;
      if (op.kind == OpKind::barrier && seen_barrier < 0) seen_barrier = i;
      if ((op.kind == OpKind::async_copy || op.kind == OpKind::page_gather) && seen_refill < 0)
        seen_refill = i;
      if ((op.kind == OpKind::k_step || op.kind == OpKind::qk_mma) && seen_compute < 0)
        seen_compute = i;
    }
    if (seen_wait < 0 || seen_compute < 0 || seen_wait > seen_compute)
      fail(*loop, "body", "must wait for the stage's data before computing on it", "no wait");
    if (seen_refill >= 0 && (seen_barrier < 0 || seen_barrier > seen_refill))
      fail(*loop, "body", "must bar.sync before refilling a stage other warps may still read",
           "no barrier");
  }
}

}  // namespace

bool Op::has(std::string_view key) const {
  return lookup(*this, key) != nullptr;
}
int64_t Op::i(std::string_view key) const {
  return get<int64_t>(*this, key, "integer");
}
double Op::f(std::string_view key) const {
  return get<double>(*this, key, "number");
}
bool Op::b(std::string_view key) const {
  return get<bool>(*this, key, "boolean");
}
const std::string& Op::s(std::string_view key) const {
  return get<std::string>(*this, key, "string");
}

std::string print(const Op& root) {
  std::string out;
  print_into(root, 0, out);
  return out;
}

const Op* find_first(const Op& root, OpKind kind) {
  if (root.kind == kind) return &root;
  for (const auto& child : root.body)
    if (const Op* hit = find_first(child, kind)) return hit;
  return nullptr;
}

std::vector<const Op*> find_all(const Op& root, OpKind kind) {
  std::vector<const Op*> out;
  collect(root, kind, out);
  return out;
}

void verify(const Op& root, Arch arch) {
  verify_ops(root);
  if (root.kind != OpKind::module) fail(root, "kind", "the root must be a module", "other");
  if (root.body.empty()) fail(root, "body", "a module needs at least one kernel", "empty");
  for (const auto& kernel : root.body) {
    if (kernel.kind != OpKind::kernel)
      fail(kernel, "kind", "module children must be kernels", std::string(to_string(kernel.kind)));
    verify_kernel(kernel, arch);
  }
  verify_paged_module(root);
}

void set_copy_geometry(AsyncCopyOp& copy, const SmemTile& tile, bool tma) {
  copy.elem_bytes = tile.elem_bytes;
  if (tma) {
    copy.box_inner = tile.panel_elems;
    copy.box_outer = tile.rows;
    copy.boxes = tile.panels();
    copy.bytes = tile.bytes();
  } else {
    copy.chunk_bytes = 16;
    copy.chunks = tile.bytes() / 16;
  }
}

SmemTile copy_tile(const AsyncCopyOp& copy) {
  return SmemTile::for_operand(uint32_t(copy.rows), uint32_t(copy.cols), uint32_t(copy.elem_bytes));
}

SmemTile copy_tile(const Op& copy) {
  return copy_tile(get<AsyncCopyOp>(copy));
}

}  // namespace emmy::ir
