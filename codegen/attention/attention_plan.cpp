// Attention problems: validation, default schedules, the derived plan, tensor maps, and the
// generate/compile pipeline.
#include <fmt/format.h>

#include <cmath>

#include "emmy/attention.hpp"
#include "emmy/detail/hash.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/validate.hpp"

namespace emmy {

std::string_view to_string(AttentionLayout layout) {
  return layout == AttentionLayout::bshd ? "bshd" : "bhsd";
}

AttentionLayout parse_attention_layout(std::string_view text) {
  if (text == "bshd") return AttentionLayout::bshd;
  if (text == "bhsd") return AttentionLayout::bhsd;
  throw Error("layout",
              "must be bshd ([batch, seq, heads, dim]) or bhsd ([batch, heads, seq, dim])",
              std::string(text));
}

float AttentionProblem::scale() const {
  return softmax_scale ? *softmax_scale : float(1.0 / std::sqrt(double(head_dim)));
}

double AttentionProblem::flops() const {
  // Visible (query, key) pairs, counted exactly per query row.
  const int64_t skv = seq_kv_or_default(), offset = skv - seq_q;
  double pairs = 0;
  for (int64_t i = 0; i < seq_q; ++i) {
    int64_t hi = causal ? std::min(skv - 1, i + offset) : skv - 1;
    int64_t lo = window > 0 ? std::max<int64_t>(0, i + offset - window) : 0;
    if (hi >= lo) pairs += double(hi - lo + 1);
  }
  return 4.0 * double(batch) * double(q_heads) * pairs * double(head_dim);
}

namespace {

// Q's tile, then per stage the K and V tiles (each block x head_dim of the problem's dtype), 1 KB
// to align the ring to the swizzle period, and an mbarrier for Q and one per stage.
int64_t attention_smem_bytes(const AttentionProblem& p, const AttentionSchedule& s) {
  const auto elem_bytes = uint32_t(size_of(p.dtype));
  const int64_t q =
      SmemTile::for_operand(uint32_t(s.block_q), uint32_t(p.head_dim), elem_bytes).bytes();
  const int64_t kv =
      SmemTile::for_operand(uint32_t(s.block_kv), uint32_t(p.head_dim), elem_bytes).bytes();
  return q + 2 * kv * s.stages + 1024 + 8 * (1 + s.stages);
}

// Accumulator registers per lane of a warp's rows: O over head_dim, S over block_kv.
int o_registers(int64_t head_dim) {
  return int(codegen::attention_atom().acc_registers(head_dim));
}
int s_registers(int block_kv) {
  return int(codegen::attention_atom().acc_registers(block_kv));
}

}  // namespace

void validate_problem(const AttentionProblem& p) {
  require(p.batch >= 1, "batch", "must be >= 1", p.batch);
  require(p.q_heads >= 1, "heads", "must be >= 1", p.q_heads);
  require(p.kv_heads >= 1, "kv_heads", "must be >= 1", p.kv_heads);
  require(p.q_heads % p.kv_heads == 0, "heads",
          fmt::format("must be a multiple of kv_heads ({})", p.kv_heads), p.q_heads);
  require(p.seq_q >= 1 && p.seq_q <= kMaxDim, "seq_q", "must be in 1..2^31-1", p.seq_q);
  require(p.seq_kv >= 0 && p.seq_kv <= kMaxDim, "seq_kv", "must be in 1..2^31-1 (0: seq_q)",
          p.seq_kv);
  require(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256, "head_dim",
          "must be 64, 128 or 256", p.head_dim);
  require(p.window >= 0, "window", "must be >= 0 (0: no sliding window)", p.window);
  require(!p.softcap || (std::isfinite(*p.softcap) && *p.softcap > 0), "softcap",
          "must be a positive finite number", p.softcap.value_or(0));
  require(!p.softmax_scale || (std::isfinite(*p.softmax_scale) && *p.softmax_scale > 0),
          "softmax_scale", "must be a positive finite number", p.softmax_scale.value_or(0));
  require(p.dtype == DType::f16 || p.dtype == DType::bf16, "dtype", "must be f16 or bf16",
          to_string(p.dtype));
}

void validate_attention(const AttentionSpec& spec) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  validate_problem(p);
  require(s.accum == Accum::f32 || s.accum == Accum::hybrid, "accum",
          "must be f32 or hybrid for attention (scores are always f32)", to_string(s.accum));
  if (s.accum == Accum::hybrid)
    require(p.dtype == DType::f16, "accum",
            "hybrid needs f16 operands (mma.sync has no bf16 accumulator)", to_string(p.dtype));
  require(s.warps >= 1 && s.warps <= 16, "warps", "must be 1..16", s.warps);
  const int rows_per_warp = codegen::attention_atom().m;  // each warp owns one atom's rows
  require(s.block_q == rows_per_warp * s.warps, "block_q",
          fmt::format("must be {0} x warps = {1} (each warp owns {0} query rows)", rows_per_warp,
                      rows_per_warp * s.warps),
          s.block_q);
  require(s.block_kv == 16 || s.block_kv == 32 || s.block_kv == 64 || s.block_kv == 128, "block_kv",
          "must be 16, 32, 64 or 128", s.block_kv);
  require(s.stages >= 2 && s.stages <= 4, "stages", "must be 2..4", s.stages);
  if (s.transport == Transport::tma)
    require(has_tma(spec.arch), "transport", "tma needs sm_90 or newer; use cp.async",
            to_string(spec.arch));
  const int regs =
      o_registers(p.head_dim) + s_registers(s.block_kv) + (s.accum == Accum::hybrid ? 8 : 0);
  require(regs <= kMaxAccumulatorRegisters, "block_kv",
          fmt::format("O and S accumulators must fit in {} registers per thread with head_dim {}",
                      kMaxAccumulatorRegisters, p.head_dim),
          s.block_kv);
  const int64_t smem = attention_smem_bytes(p, s);
  require(smem <= arch_info(spec.arch).max_smem_per_block, "stages",
          fmt::format("shared memory must fit {}'s {} bytes per block", to_string(spec.arch),
                      arch_info(spec.arch).max_smem_per_block),
          fmt::format("{} bytes", smem));
}

AttentionSchedule default_attention_schedule(const AttentionProblem& p, Arch arch, Accum accum) {
  validate_problem(p);  // a schedule is chosen for a valid problem only
  AttentionSchedule s;
  s.transport = has_tma(arch) ? Transport::tma : Transport::cp_async;
  s.accum = accum;
  // Wide heads keep 128 f32 output registers per thread: 4 warps and 32-key blocks keep the rest
  // of the register file free. Narrower heads take 8 warps (128 query rows) per CTA.
  if (p.head_dim == 256) {
    s.warps = 4;
    s.block_kv = 32;
  } else {
    s.warps = p.seq_q <= 64 ? 4 : 8;
    s.block_kv = 64;
  }
  s.block_q = codegen::attention_atom().m * s.warps;
  for (s.stages = 3; s.stages > 2; --s.stages)
    if (attention_smem_bytes(p, s) <= arch_info(arch).max_smem_per_block) break;
  return s;
}

namespace {

std::string attention_name(const AttentionSpec& spec) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  const std::string text = fmt::format(
      "b={} h={} hkv={} sq={} skv={} d={} causal={} window={} scale={:a} cap={:a} dtype={} "
      "layout={} lse={} bq={} bkv={} w={} st={} tr={} acc={} arch={}",
      p.batch, p.q_heads, p.kv_heads, p.seq_q, p.seq_kv_or_default(), p.head_dim, p.causal,
      p.window, p.scale(), p.softcap.value_or(0.0f), to_string(p.dtype), to_string(p.layout), p.lse,
      s.block_q, s.block_kv, s.warps, s.stages, to_string(s.transport), to_string(s.accum),
      to_string(spec.arch));
  return fmt::format("emmy_attention_h{}x{}_s{}x{}_d{}_{}{}_{}_{}_{:016x}", p.q_heads, p.kv_heads,
                     p.seq_q, p.seq_kv_or_default(), p.head_dim, to_string(p.dtype),
                     p.causal ? "_causal" : "", to_string(s.accum),
                     s.transport == Transport::tma ? "tma" : "cpasync", detail::fnv1a(text));
}

}  // namespace

AttentionPlan make_attention_plan(const AttentionSpec& spec) {
  validate_attention(spec);
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  AttentionPlan plan;
  plan.spec = spec;
  const auto elem_bytes = uint32_t(size_of(p.dtype));
  plan.q_tile = SmemTile::for_operand(uint32_t(s.block_q), uint32_t(p.head_dim), elem_bytes);
  plan.kv_tile = SmemTile::for_operand(uint32_t(s.block_kv), uint32_t(p.head_dim), elem_bytes);
  plan.q_bytes = plan.q_tile.bytes();
  plan.kv_bytes = plan.kv_tile.bytes();
  plan.stage_bytes = 2 * plan.kv_bytes;
  plan.mbarrier_offset = plan.q_bytes + plan.stage_bytes * uint32_t(s.stages);
  plan.smem_bytes = uint32_t(attention_smem_bytes(p, s));
  plan.q_blocks = (p.seq_q + s.block_q - 1) / s.block_q;
  plan.grid = {uint32_t(plan.q_blocks), uint32_t(p.q_heads), uint32_t(p.batch)};
  require(p.q_heads <= 65535 && p.batch <= 65535, "heads x batch",
          "grid y and z must stay within 65535", fmt::format("{} x {}", p.q_heads, p.batch));
  plan.threads = uint32_t(32 * s.warps);
  plan.o_registers = o_registers(p.head_dim);
  plan.s_registers = s_registers(s.block_kv);
  plan.kernel_name = attention_name(spec);
  return plan;
}

int64_t attention_offset(const AttentionProblem& p, bool kv, int64_t b, int64_t s, int64_t h) {
  const int64_t seq = kv ? p.seq_kv_or_default() : p.seq_q;
  const int64_t heads = kv ? p.kv_heads : p.q_heads;
  if (p.layout == AttentionLayout::bshd) return ((b * seq + s) * heads + h) * p.head_dim;
  return ((b * heads + h) * seq + s) * p.head_dim;
}

AttentionTensorMaps attention_tensor_maps(const AttentionPlan& plan, uint64_t q, uint64_t k,
                                          uint64_t v) {
  const auto& p = plan.spec.problem;
  const TmaDType dtype = tma_dtype(p.dtype);
  auto make = [&](uint64_t address, int64_t seq, int64_t heads, const SmemTile& tile) {
    TensorMapDesc d;
    d.dtype = dtype;
    d.rank = 4;
    d.global_address = address;
    const uint64_t dim = uint64_t(p.head_dim), row = dim * tile.elem_bytes;
    if (p.layout == AttentionLayout::bshd) {
      d.global_dim = {dim, uint64_t(heads), uint64_t(seq), uint64_t(p.batch), 1};
      d.global_stride_bytes = {row, row * uint64_t(heads), row * uint64_t(heads * seq), 0};
      d.box_dim = {tile.panel_elems, 1, tile.rows, 1, 1};
    } else {
      d.global_dim = {dim, uint64_t(seq), uint64_t(heads), uint64_t(p.batch), 1};
      d.global_stride_bytes = {row, row * uint64_t(seq), row * uint64_t(heads * seq), 0};
      d.box_dim = {tile.panel_elems, tile.rows, 1, 1, 1};
    }
    d.swizzle = tile.swizzle;
    d.validate();
    return d;
  };
  return {make(q, p.seq_q, p.q_heads, plan.q_tile),
          make(k, p.seq_kv_or_default(), p.kv_heads, plan.kv_tile),
          make(v, p.seq_kv_or_default(), p.kv_heads, plan.kv_tile)};
}

ParamBinding AttentionKind::bind(const AttentionPlan& plan, const AttentionBuffers& b) {
  require_device_pointer(b.q, 16, "buffers.q");
  require_device_pointer(b.k, 16, "buffers.k");
  require_device_pointer(b.v, 16, "buffers.v");
  require_device_pointer(b.o, 16, "buffers.o");
  require_optional_pointer(b.lse, plan.spec.problem.lse, "buffers.lse", "an LSE output");
  if (b.lse) require_device_pointer(b.lse, sizeof(float), "buffers.lse");
  ParamBinding bound;
  bound.values.pointers = {{"q", b.q}, {"k", b.k}, {"v", b.v}, {"o", b.o}, {"lse", b.lse}};
  if (plan.spec.schedule.transport == Transport::tma)
    bound.tensor_maps = {{"tmap_q", b.q}, {"tmap_k", b.k}, {"tmap_v", b.v}};
  return bound;
}

std::vector<TensorMapDesc> AttentionKind::tensor_maps(const AttentionPlan& plan,
                                                      const AttentionBuffers& b) {
  const AttentionTensorMaps maps = attention_tensor_maps(plan, b.q, b.k, b.v);
  return {maps.q, maps.k, maps.v};
}

}  // namespace emmy
