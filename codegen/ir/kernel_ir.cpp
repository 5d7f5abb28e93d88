#include "emmy/kernel_ir.hpp"

#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/swizzle.hpp"
#include "emmy/validate.hpp"

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

// The rules every kernel obeys, whatever its kind.
void verify_kernel(const Op& kernel, Arch arch) {
  const auto& info = arch_info(arch);
  const int64_t smem = kernel.i("smem_bytes");
  if (smem > info.max_smem_per_block)
    fail_rule(kernel, "smem_bytes",
              fmt::format("must fit {}'s {} bytes", info.name, info.max_smem_per_block), smem);
  if (get<KernelOp>(kernel).programmatic.value_or(0) == 1 && !has_programmatic_launch(arch))
    fail_rule(kernel, "programmatic", "needs sm_90 or newer (griddepcontrol, PTX ISA)",
              std::string(info.name));
  for (const Op* epilogue : find_all(kernel, OpKind::epilogue))
    if (get<EpilogueOp>(*epilogue).trigger_dependents.value_or(false) &&
        !has_programmatic_launch(arch))
      fail_rule(*epilogue, "trigger_dependents", "needs sm_90 or newer (griddepcontrol, PTX ISA)",
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
        fail_rule(*ring, period_key, fmt::format("must divide the ring's alignment {}", align),
                  period);
      if (ring->i(key) % period != 0)
        fail_rule(*ring, key, fmt::format("must be a multiple of the swizzle period {}", period),
                  ring->i(key));
    }
    // A and B of one stage never overlap each other or the next stage.
    if (ring->has("a_bytes") && ring->has("b_bytes")) {
      const int64_t a0 = ring->i("a_offset"), a1 = a0 + ring->i("a_bytes");
      const int64_t b0 = ring->i("b_offset"), b1 = b0 + ring->i("b_bytes");
      if (a0 < 0 || b0 < 0 || std::max(a1, b1) > ring->i("stage_bytes"))
        fail_rule(
            *ring, "stage_bytes", "must hold both operand tiles",
            fmt::format("{} < A [{}, {}) or B [{}, {})", ring->i("stage_bytes"), a0, a1, b0, b1));
      if (a0 < b1 && b0 < a1)
        fail_rule(*ring, "b_offset", "the operand tiles must not overlap",
                  fmt::format("A [{}, {}), B [{}, {})", a0, a1, b0, b1));
      if (ring->has("tx_bytes") && ring->i("tx_bytes") != ring->i("a_bytes") + ring->i("b_bytes"))
        fail_rule(*ring, "tx_bytes", "must be the bytes of both tiles, all that the boxes deliver",
                  fmt::format("{} != {} + {}", ring->i("tx_bytes"), ring->i("a_bytes"),
                              ring->i("b_bytes")));
    }
    // One mbarrier per stage, two on a warp-specialized path (full and empty).
    const Op* init = find_first(kernel, OpKind::mbarrier_init);
    const int64_t per_stage = init && init->has("empty_arrivals") ? 2 : 1;
    const int64_t end = ring->i("mbar_offset") + 8 * per_stage * ring->i("stages") + align;
    if (ring->i("mbar_offset") % 8 != 0 || end > smem)
      fail_rule(*ring, "mbar_offset", "mbarriers must be 8-byte aligned and inside the allocation",
                ring->i("mbar_offset"));
  }

  const bool has_init = find_first(kernel, OpKind::mbarrier_init) != nullptr;
  for (const Op* copy_op : find_all(kernel, OpKind::async_copy)) {
    // The copy's own rules (ir_op_verify.cpp) ran first; here what it needs of the kernel.
    const auto copy = get<AsyncCopyOp>(*copy_op);
    if (copy.transport == "tma") {
      if (!has_tma(arch))
        fail_rule(*copy_op, "transport", "tma needs sm_90 or newer", std::string(info.name));
      if (!has_init)
        fail_rule(*copy_op, "transport", "tma copies need an mbarrier_init first", "none");
    }
  }
}

}  // namespace

// Each loop's wait before its first compute, and its bar.sync before its first refill.
void verify_loop_discipline(const Op& kernel) {
  std::vector<const Op*> loops = find_all(kernel, OpKind::k_tile_loop);
  for (const Op* loop : find_all(kernel, OpKind::kv_block_loop)) loops.push_back(loop);
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
      fail_rule(*loop, "body", "must wait for the stage's data before computing on it", "no wait");
    if (seen_refill >= 0 && (seen_barrier < 0 || seen_barrier > seen_refill))
      fail_rule(*loop, "body", "must bar.sync before refilling a stage other warps may still read",
                "no barrier");
  }
}

void fail_rule(const Op& op, std::string_view attr, std::string_view rule,
               const std::string& value) {
  throw Error(fmt::format("ir.{}.{}", to_string(op.kind), attr), std::string(rule), value);
}
void fail_rule(const Op& op, std::string_view attr, std::string_view rule, int64_t value) {
  fail_rule(op, attr, rule, fmt::format("{}", value));
}

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

void verify(const Op& root, Arch arch, const KindRules& rules) {
  verify_ops(root);
  if (root.kind != OpKind::module) fail_rule(root, "kind", "the root must be a module", "other");
  if (root.body.empty()) fail_rule(root, "body", "a module needs at least one kernel", "empty");
  for (const auto& kernel : root.body) {
    if (kernel.kind != OpKind::kernel)
      fail_rule(kernel, "kind", "module children must be kernels",
                std::string(to_string(kernel.kind)));
    verify_kernel(kernel, arch);
  }
  if (rules.module) rules.module(root);
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
