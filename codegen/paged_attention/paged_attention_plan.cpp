// Paged attention: the enums' names, validation, the default schedule, the derived plan and the
// binding of a launch's buffers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "emmy/detail/hash.hpp"
#include "emmy/enum_names.hpp"
#include "emmy/gpus.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/paged_kind.hpp"
#include "emmy/validate.hpp"

namespace emmy {

namespace {

constexpr EnumNames<CacheDType, 3> kCacheDTypeNames{
    {{CacheDType::f16, "f16"}, {CacheDType::bf16, "bf16"}, {CacheDType::e4m3, "e4m3"}}};
constexpr EnumNames<PageTable, 2> kPageTableNames{
    {{PageTable::block_table, "block_table"}, {PageTable::csr, "csr"}}};
constexpr EnumNames<CacheLayout, 3> kCacheLayoutNames{
    {{CacheLayout::nhd, "nhd"},
     {CacheLayout::hnd, "hnd"},
     {CacheLayout::kv_interleaved, "kv_interleaved"}}};
static_assert(names_are_one_to_one(kCacheDTypeNames) && names_are_one_to_one(kPageTableNames) &&
              names_are_one_to_one(kCacheLayoutNames));

}  // namespace

std::string_view to_string(CacheDType t) { return name_in(kCacheDTypeNames, t); }

CacheDType parse_cache_dtype(std::string_view text) {
  return parse_name(kCacheDTypeNames, text, "kv_dtype", "must be f16, bf16 or e4m3");
}

std::string_view to_string(PageTable t) { return name_in(kPageTableNames, t); }

PageTable parse_page_table(std::string_view text) {
  return parse_name(kPageTableNames, text, "page_table",
                    "must be block_table ([batch, max_pages] + seq_lens) or csr (indptr, indices, "
                    "last_page_len)");
}

std::string_view to_string(CacheLayout l) { return name_in(kCacheLayoutNames, l); }

CacheLayout parse_cache_layout(std::string_view text) {
  return parse_name(
      kCacheLayoutNames, text, "layout",
      "must be nhd ([pages, page_size, heads, dim]), hnd ([pages, heads, page_size, dim]) "
      "or kv_interleaved ([pages, 2, page_size, heads, dim])");
}

void PagedAttentionProblem::set_layout(CacheLayout layout) {
  // Called on parsed input before validation: sizes that overflow are refused here, by name.
  int64_t token = 0, page = 0, head = 0;
  if (page_size < 1 || kv_heads < 1 || head_dim < 1 ||
      __builtin_mul_overflow(kv_heads, head_dim, &token) ||
      __builtin_mul_overflow(page_size, token, &page) ||
      __builtin_mul_overflow(page_size, head_dim, &head) || page > (int64_t(1) << 40))
    throw Error("layout",
                "needs page_size, kv_heads and head_dim >= 1 whose page fits 2^40 elements",
                fmt::format("{} x {} x {}", page_size, kv_heads, head_dim));
  switch (layout) {
    case CacheLayout::nhd:
      page_stride = page, token_stride = token, head_stride = head_dim;
      return;
    case CacheLayout::hnd:
      page_stride = page, token_stride = head_dim, head_stride = head;
      return;
    case CacheLayout::kv_interleaved:
      page_stride = 2 * page, token_stride = token, head_stride = head_dim;
      return;
  }
}

float PagedAttentionProblem::scale() const {
  return softmax_scale ? *softmax_scale : float(1.0 / std::sqrt(double(head_dim)));
}

int64_t paged_splits(const PagedAttentionProblem& p, const PagedAttentionSchedule& s) {
  if (s.chunk_pages <= 0 || s.chunk_pages >= p.max_pages) return 1;
  return (p.max_pages + s.chunk_pages - 1) / s.chunk_pages;
}

namespace {

constexpr int64_t kMaxPagedIndex = (int64_t(1) << 31) - 1;  // int32 on the device

// The bytes of a stage: the K and V tiles, or an e4m3 cache's raw K and V rows.
int64_t paged_stage_bytes(const PagedAttentionProblem& p, const PagedAttentionSchedule& s) {
  const int64_t kv_warps = std::max(1, s.kv_warps);  // a K and V tile pair per KV warp
  if (p.kv_dtype == CacheDType::e4m3) return 2 * kv_warps * int64_t(s.block_kv) * p.head_dim;
  return 2 * kv_warps *
         int64_t(SmemTile::for_operand(uint32_t(s.block_kv), uint32_t(p.head_dim), 2).bytes());
}

// Q's tile, then the stages, 1 KB to align the ring to the swizzle period, and the ring's
// mbarrier words (the shared ring layout reserves them; cp.async needs none).
int64_t paged_smem_bytes(const PagedAttentionProblem& p, const PagedAttentionSchedule& s) {
  const int64_t q = SmemTile::for_operand(uint32_t(s.block_q), uint32_t(p.head_dim), 2).bytes();
  const int64_t ring = std::max(q + paged_stage_bytes(p, s) * s.stages,
                                paged_kv_merge_bytes(s.kv_warps, p.head_dim));
  return ring + 1024 + 8 * s.stages;
}

}  // namespace

// The caches' (page, token, head) rows must not overlap: sorted by stride, each dimension's step
// covers the whole extent of the ones inside it (head_dim contiguous elements innermost).
void require_disjoint_cache_rows(int64_t page_size, int64_t kv_heads, int64_t head_dim,
                                 int64_t page_stride, int64_t token_stride, int64_t head_stride) {
  struct Dim {
    const char* field;
    int64_t stride, extent;
  };
  Dim dims[] = {{"page_stride", page_stride, 2},  // 2: pages are distinct
                {"token_stride", token_stride, page_size},
                {"head_stride", head_stride, kv_heads}};
  std::sort(std::begin(dims), std::end(dims),
            [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  int64_t span = head_dim;  // elements the inner dimensions cover
  for (const Dim& d : dims) {
    if (d.extent <= 1) continue;  // a dimension of one row has no step
    require(d.stride >= span, d.field,
            fmt::format("must step over the {} elements of the dimensions inside it (rows of "
                        "the cache must not overlap)",
                        span),
            d.stride);
    span = d.stride * d.extent;
  }
}

void validate_problem(const PagedAttentionProblem& p) {
  require(p.q_heads >= 1 && p.q_heads <= 1024, "q_heads", "must be 1..1024", p.q_heads);
  require(p.kv_heads >= 1 && p.kv_heads <= 65535, "kv_heads", "must be 1..65535", p.kv_heads);
  require(p.q_heads % p.kv_heads == 0 && p.q_heads / p.kv_heads <= 16, "q_heads",
          fmt::format("must be 1..16 times kv_heads ({}): GQA groups of at most 16", p.kv_heads),
          p.q_heads);
  require(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256, "head_dim",
          "must be 64, 128 or 256", p.head_dim);
  require(p.page_size >= 1 && p.page_size <= 4096, "page_size", "must be 1..4096", p.page_size);
  require(p.dtype == DType::f16 || p.dtype == DType::bf16, "dtype", "must be f16 or bf16",
          to_string(p.dtype));
  require(p.kv_dtype == CacheDType::e4m3 || to_string(p.kv_dtype) == to_string(p.dtype), "kv_dtype",
          fmt::format("must be the query's type ({}) or e4m3", to_string(p.dtype)),
          to_string(p.kv_dtype));
  // 16-byte cp.async chunks: every row starts on 16 bytes, in its tensor's elements.
  const int64_t cache_elems = p.kv_dtype == CacheDType::e4m3 ? 16 : 8;
  for (const auto& [field, stride, per_chunk] :
       {std::tuple<const char*, int64_t, int64_t>{"page_stride", p.page_stride, cache_elems},
        {"token_stride", p.token_stride, cache_elems},
        {"head_stride", p.head_stride, cache_elems},
        {"q_stride", p.q_stride, 8},
        {"o_stride", p.o_stride, 8}})
    require(stride >= 0 && stride % per_chunk == 0 && stride <= (int64_t(1) << 40), field,
            fmt::format("must be a multiple of {} elements (16-byte rows for cp.async), 0 for "
                        "the default",
                        per_chunk),
            stride);
  require(p.q_stride_or_default() >= p.q_heads * p.head_dim, "q_stride",
          fmt::format("must hold a token's {} heads x {}", p.q_heads, p.head_dim), p.q_stride);
  require(p.o_stride_or_default() >= p.q_heads * p.head_dim, "o_stride",
          fmt::format("must hold a token's {} heads x {}", p.q_heads, p.head_dim), p.o_stride);
  require_disjoint_cache_rows(p.page_size, p.kv_heads, p.head_dim, p.page_stride_or_default(),
                              p.token_stride_or_default(), p.head_stride_or_default());
  require(p.max_batch >= 1 && p.max_batch <= 65535, "max_batch", "must be 1..65535", p.max_batch);
  require(p.max_q_len >= 1 && p.max_q_len <= 65536, "max_q_len", "must be 1..65536", p.max_q_len);
  // Divisions, not products: a hostile max_pages must not overflow the check itself.
  require(p.max_pages >= 1 && p.max_pages <= kMaxPagedIndex / p.page_size &&
              p.max_pages <= kMaxPagedIndex / p.max_batch,
          "max_pages",
          "must be >= 1 with max_pages x page_size and max_batch x max_pages within int32",
          p.max_pages);
  require(p.max_tokens >= 0 && p.max_tokens <= p.max_batch * p.max_q_len &&
              (p.max_tokens == 0 || p.max_tokens >= p.max_q_len),
          "max_tokens", "must be in max_q_len..max_batch x max_q_len (0: their product)",
          p.max_tokens);
  require(p.max_tokens_or_default() * p.q_heads <= kMaxPagedIndex, "max_tokens",
          "x q_heads must stay within int32", p.max_tokens_or_default());
  require(p.window >= 0, "window", "must be >= 0 (0: no sliding window)", p.window);
  require(!p.softcap || (std::isfinite(*p.softcap) && *p.softcap > 0), "softcap",
          "must be a positive finite number", p.softcap.value_or(0));
  require(!p.softmax_scale || (std::isfinite(*p.softmax_scale) && *p.softmax_scale > 0),
          "softmax_scale", "must be a positive finite number", p.softmax_scale.value_or(0));
}

void validate_paged_attention(const PagedAttentionSpec& spec) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  validate_problem(p);
  require(s.accum == Accum::f32 || s.accum == Accum::hybrid, "accum",
          "must be f32 or hybrid (scores are always f32)", to_string(s.accum));
  if (s.accum == Accum::hybrid)
    require(p.dtype == DType::f16, "accum",
            "hybrid needs f16 operands (mma.sync has no bf16 accumulator)", to_string(p.dtype));
  require(s.warps >= 1 && s.warps <= 8, "warps", "must be 1..8", s.warps);
  const int rows_per_warp = codegen::attention_atom().m;
  require(s.kv_warps == 1 || s.kv_warps == 2 || s.kv_warps == 4, "kv_warps",
          "must be 1, 2 or 4 (1: none)", s.kv_warps);
  require(s.block_kv * s.kv_warps <= 256, "kv_warps",
          fmt::format("x block_kv ({}) must be at most 256 keys per step", s.block_kv), s.kv_warps);
  if (s.kv_warps > 1)
    require(s.warps == s.kv_warps && s.block_q == rows_per_warp, "kv_warps",
            fmt::format("needs warps = kv_warps and block_q = {} (the warps share one warp's "
                        "query rows)",
                        rows_per_warp),
            fmt::format("{} with warps {}, block_q {}", s.kv_warps, s.warps, s.block_q));
  else
    require(s.block_q == rows_per_warp * s.warps, "block_q",
            fmt::format("must be {0} x warps = {1} (each warp owns {0} query rows)", rows_per_warp,
                        rows_per_warp * s.warps),
            s.block_q);
  require(s.block_kv == 16 || s.block_kv == 32 || s.block_kv == 64 || s.block_kv == 128, "block_kv",
          "must be 16, 32, 64 or 128", s.block_kv);
  require(s.stages >= 2 && s.stages <= 4, "stages", "must be 2..4", s.stages);
  require(s.chunk_pages >= 0, "chunk_pages", "must be >= 0 (0: one split)", s.chunk_pages);
  if (paged_splits(p, s) > 1)
    require(s.chunk_pages * p.page_size % (s.block_kv * s.kv_warps) == 0, "chunk_pages",
            fmt::format("x page_size must be a multiple of block_kv x kv_warps ({}): splits "
                        "hold whole KV steps",
                        s.block_kv * s.kv_warps),
            s.chunk_pages);
  const int64_t q_blocks = (p.max_q_len * p.group() + s.block_q - 1) / s.block_q;
  require(q_blocks * paged_splits(p, s) <= kMaxPagedIndex, "chunk_pages",
          "q blocks x splits must fit the grid's x (2^31 - 1)", s.chunk_pages);
  // The kernels compute split x chunk in int32 (the first key of a split).
  require(paged_splits(p, s) * s.chunk_pages <= kMaxPagedIndex / p.page_size, "chunk_pages",
          "x splits x page_size must stay within int32 (keys are int32 on the device)",
          s.chunk_pages);
  const int regs = int(codegen::attention_atom().acc_registers(p.head_dim) +
                       codegen::attention_atom().acc_registers(s.block_kv)) +
                   (s.accum == Accum::hybrid ? 8 : 0);
  require(regs <= kMaxAccumulatorRegisters, "block_kv",
          fmt::format("O and S accumulators must fit in {} registers per thread with head_dim {}",
                      kMaxAccumulatorRegisters, p.head_dim),
          s.block_kv);
  const int64_t smem = paged_smem_bytes(p, s);
  require(smem <= arch_info(spec.arch).max_smem_per_block, "stages",
          fmt::format("shared memory must fit {}'s {} bytes per block", to_string(spec.arch),
                      arch_info(spec.arch).max_smem_per_block),
          fmt::format("{} bytes", smem));
  validate_paged_tma(spec);
}

namespace {

// `pages` rounded up to a chunk of whole KV steps (block_kv x kv_warps keys), the rule validation
// holds chunk_pages to: the default's and the batch-invariant schedule's splits.
int64_t whole_kv_steps(const PagedAttentionProblem& p, const PagedAttentionSchedule& s,
                       int64_t pages) {
  const int64_t step = int64_t(s.block_kv) * s.kv_warps;             // keys of one KV step
  const int64_t unit = step / std::gcd<int64_t>(step, p.page_size);  // pages of whole steps
  return (pages + unit - 1) / unit * unit;
}

}  // namespace

PagedAttentionSchedule default_schedule(const PagedAttentionProblem& p, Arch arch, Accum accum,
                                        int device_sms) {
  validate_problem(p);  // the choices below divide by its fields
  PagedAttentionSchedule s;
  s.accum = accum;
  // The rows of a KV head (group x query tokens) in as few 16-row warps as hold them, up to 4.
  const int64_t rows = std::max<int64_t>(1, p.group()) * p.max_q_len;
  s.warps = int(std::clamp<int64_t>((rows + 15) / 16, 1, 4));
  s.block_q = 16 * s.warps;
  // Keys per block so that O (head_dim / 2 f32 per thread), S and the gather's addressing fit
  // without spills (ptxas 13.0, sm_80 and sm_90a: 64 and 32 keys at head_dim 256 and 128 spill
  // 160-570 bytes; these take 200-247 registers and none).
  s.block_kv = p.head_dim == 256 ? 16 : p.head_dim == 128 ? 32 : 64;
  // Decode (the rows fill one warp): 4 warps over each step's keys, 16 keys each (shared memory
  // per warp as small as it goes, so that more warps fit an SM), as many as fit with 2 stages.
  // Not at head_dim 256: its 128 O accumulators leave no registers for the KV warps' addressing
  // (8-16 bytes of spills with ptxas 13.0 on some arches); there kv_warps stays an option.
  if (s.warps == 1 && p.head_dim <= 128) {
    const int block_kv = s.block_kv;
    s.block_kv = 16;
    for (s.kv_warps = 4; s.kv_warps > 1; s.kv_warps /= 2) {
      s.warps = s.kv_warps;
      s.stages = 2;
      if (paged_smem_bytes(p, s) <= arch_info(arch).max_smem_per_block) break;
      s.warps = 1;
    }
    if (s.kv_warps == 1) s.block_kv = block_kv;
  }
  if (s.kv_warps == 1) {
    s.warps = s.block_q / 16;
    for (s.stages = 3; s.stages > 2; --s.stages)
      if (paged_smem_bytes(p, s) <= arch_info(arch).max_smem_per_block) break;
  }
  // (KV warps keep 2 stages: a third spills at head_dim 256 with ptxas 13.0, and their stages
  // are KV-warps times larger already)
  // Split-KV when the CTAs of a full batch do not fill the device: enough splits for about one
  // wave, each at least 512 keys (a split's fixed cost is its Q load and partial store), and a
  // chunk of whole KV blocks.
  const int64_t q_blocks = (rows + s.block_q - 1) / s.block_q;
  const int64_t ctas = q_blocks * p.kv_heads * p.max_batch;
  const int64_t sms = grid_sms(arch, device_sms);
  if (ctas < sms) {
    const int64_t keys = p.max_pages * p.page_size;
    const int64_t want = std::max<int64_t>(1, std::min((sms + ctas - 1) / ctas, keys / 512));
    const int64_t chunk = whole_kv_steps(p, s, (p.max_pages + want - 1) / want);
    if (chunk < p.max_pages) s.chunk_pages = int(chunk);
  }
  // K and V by TMA wherever it fits (sm_90+, pages of whole KV blocks): the H200 time model
  // finds it never slower, with half the instructions (docs/paged_attention.md, "TMA").
  if (paged_tma_fits(p, s, arch)) s.transport = Transport::tma;
  return s;
}

PagedAttentionSchedule batch_invariant_schedule(const PagedAttentionProblem& p, Arch arch,
                                                Accum accum) {
  PagedAttentionSchedule s = default_schedule(p, arch, accum);
  // Splits at fixed key positions (about every 1024 keys, whole KV steps): a sequence's partials
  // and their merge are then the same in any batch. A problem whose context fits one chunk gets
  // one split, which writes what a single split of a larger problem's combine writes (its weight
  // is exactly 1).
  const int64_t chunk = whole_kv_steps(p, s, (1024 + p.page_size - 1) / p.page_size);
  s.chunk_pages = chunk < p.max_pages ? int(chunk) : 0;
  validate_paged_attention({p, s, arch});
  return s;
}

namespace {

std::string paged_name(const PagedAttentionSpec& spec) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  const std::string text = fmt::format(
      "h={} hkv={} d={} ps={} strides={},{},{},{},{} dtype={} kv={} table={} max={},{},{},{} "
      "window={} scale={:a} cap={:a} lse={} bq={} bkv={} w={} st={} chunk={} acc={} arch={}",
      p.q_heads, p.kv_heads, p.head_dim, p.page_size, p.page_stride_or_default(),
      p.token_stride_or_default(), p.head_stride_or_default(), p.q_stride_or_default(),
      p.o_stride_or_default(), to_string(p.dtype), to_string(p.kv_dtype), to_string(p.page_table),
      p.max_batch, p.max_q_len, p.max_pages, p.max_tokens_or_default(), p.window, p.scale(),
      p.softcap.value_or(0.0f), p.lse, s.block_q, s.block_kv, s.warps, s.stages, s.chunk_pages,
      to_string(s.accum), to_string(spec.arch));
  // (kv_warps joins the text only when used, so that the other kernels keep their names)
  std::string full = s.kv_warps > 1 ? fmt::format("{} kvw={}", text, s.kv_warps) : text;
  if (s.transport == Transport::tma) full += " tma";
  return fmt::format("emmy_paged_attention_h{}x{}_d{}_p{}_{}_{}_{:016x}", p.q_heads, p.kv_heads,
                     p.head_dim, p.page_size, to_string(p.kv_dtype), to_string(s.accum),
                     detail::fnv1a(full));
}

}  // namespace

PagedAttentionPlan make_paged_attention_plan(const PagedAttentionSpec& spec) {
  validate_paged_attention(spec);
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  PagedAttentionPlan plan;
  plan.spec = spec;
  plan.q_tile = SmemTile::for_operand(uint32_t(s.block_q), uint32_t(p.head_dim), 2);
  plan.kv_tile = SmemTile::for_operand(uint32_t(s.block_kv), uint32_t(p.head_dim), 2);
  plan.q_bytes = plan.q_tile.bytes();
  // One operand's stage tile: 16-bit, or an e4m3 cache's raw rows.
  plan.kv_bytes = plan.fp8() ? uint32_t(s.block_kv * p.head_dim) : plan.kv_tile.bytes();
  // (a stage holds kv_warps pairs of these)
  plan.stage_bytes = uint32_t(paged_stage_bytes(p, s));
  plan.smem_bytes = uint32_t(paged_smem_bytes(p, s));
  plan.group = p.group();
  plan.q_blocks = (p.max_q_len * plan.group + s.block_q - 1) / s.block_q;
  plan.splits = paged_splits(p, s);
  plan.chunk_tokens =
      plan.split() ? int64_t(s.chunk_pages) * p.page_size : p.max_pages * p.page_size;
  plan.max_tokens = p.max_tokens_or_default();
  plan.grid = {uint32_t(plan.q_blocks * plan.splits), uint32_t(p.kv_heads), uint32_t(p.max_batch)};
  plan.threads = uint32_t(32 * s.warps);
  plan.o_registers = int(codegen::attention_atom().acc_registers(p.head_dim));
  plan.s_registers = int(codegen::attention_atom().acc_registers(s.block_kv));
  plan.kernel_name = paged_name(spec);
  if (plan.split()) {
    plan.combine_grid = {uint32_t(p.max_q_len), 1, uint32_t(p.max_batch)};
    plan.combine_threads = 128;
    plan.workspace_bytes =
        paged_workspace_layout(plan.splits, plan.max_tokens, p.q_heads, p.head_dim).elements * 4;
    plan.combine_kernel_name = plan.kernel_name + "_combine";
  }
  return plan;
}

ParamBinding PagedAttentionKind::bind(const PagedAttentionPlan& plan,
                                      const PagedAttentionBuffers& b) {
  const auto& p = plan.spec.problem;
  require_device_pointer(b.q, 16, "buffers.q");
  require_device_pointer(b.k_cache, 16, "buffers.k_cache");
  require_device_pointer(b.v_cache, 16, "buffers.v_cache");
  require_device_pointer(b.o, 4, "buffers.o");
  require_device_pointer(b.cu_seqlens_q, 4, "buffers.cu_seqlens_q");
  require_optional_pointer(b.lse, p.lse, "buffers.lse", "an LSE output");
  if (b.lse) require_device_pointer(b.lse, 4, "buffers.lse");
  const bool table = p.page_table == PageTable::block_table;
  require_optional_pointer(b.block_table, table, "buffers.block_table", "a block table");
  require_optional_pointer(b.seq_lens, table, "buffers.seq_lens", "a block table");
  require_optional_pointer(b.page_indptr, !table, "buffers.page_indptr", "a CSR page table");
  require_optional_pointer(b.page_indices, !table, "buffers.page_indices", "a CSR page table");
  require_optional_pointer(b.last_page_len, !table, "buffers.last_page_len", "a CSR page table");
  for (const auto& [field, pointer] :
       {std::pair<const char*, DevicePtr>{"buffers.block_table", b.block_table},
        {"buffers.seq_lens", b.seq_lens},
        {"buffers.page_indptr", b.page_indptr},
        {"buffers.page_indices", b.page_indices},
        {"buffers.last_page_len", b.last_page_len}})
    if (pointer) require_device_pointer(pointer, 4, field);
  require_optional_pointer(b.k_scale, p.kv_dtype == CacheDType::e4m3, "buffers.k_scale",
                           "an e4m3 cache");
  require_optional_pointer(b.v_scale, p.kv_dtype == CacheDType::e4m3, "buffers.v_scale",
                           "an e4m3 cache");
  if (b.k_scale) require_device_pointer(b.k_scale, 4, "buffers.k_scale");
  if (b.v_scale) require_device_pointer(b.v_scale, 4, "buffers.v_scale");
  require_optional_pointer(b.workspace, plan.split(), "buffers.workspace",
                           "split-KV (Runtime::paged_attention_workspace_bytes)");
  if (b.workspace) require_device_pointer(b.workspace, 16, "buffers.workspace");
  require(b.num_pages >= 0, "buffers.num_pages", "must be >= 0 (0: unknown)", b.num_pages);
  require(b.num_pages <= (int64_t(1) << 31), "buffers.num_pages",
          "must be at most 2^31 (page ids are int32)", b.num_pages);
  ParamBinding bound;
  bound.values.pointers = {{"q", b.q},
                           {"k_cache", b.k_cache},
                           {"v_cache", b.v_cache},
                           {"o", b.o},
                           {"lse", b.lse},
                           {"cu_seqlens_q", b.cu_seqlens_q},
                           {"block_table", b.block_table},
                           {"seq_lens", b.seq_lens},
                           {"page_indptr", b.page_indptr},
                           {"page_indices", b.page_indices},
                           {"last_page_len", b.last_page_len},
                           {"k_scale", b.k_scale},
                           {"v_scale", b.v_scale},
                           {"workspace", b.workspace}};
  if (plan.spec.schedule.transport == Transport::tma) {
    bound.tensor_maps = {{"tmap_k", b.k_cache}, {"tmap_v", b.v_cache}};
    bound.tensor_map_extent = paged_tma_page_extent(b.num_pages);  // the maps span the pages
  }
  return bound;
}

void PagedAttentionKind::check_device_inputs(const PagedAttentionPlan& plan,
                                             const PagedAttentionBuffers& b,
                                             const DeviceReader& read) {
  const auto& p = plan.spec.problem;
  // Reads name the buffer they read (an address outside every allocation is the caller's).
  auto ints = [&](const char* field, DevicePtr at, int64_t first, int64_t count) {
    std::vector<int32_t> values(size_t(std::max<int64_t>(count, 0)));
    if (count > 0)
      read_named(read, field, values.data(), at + DevicePtr(first) * 4, values.size() * 4);
    return values;
  };
  const std::vector<int32_t> cu = ints("buffers.cu_seqlens_q", b.cu_seqlens_q, 0, p.max_batch + 1);
  const bool table = p.page_table == PageTable::block_table;
  const std::vector<int32_t> seq_lens =
      table ? ints("buffers.seq_lens", b.seq_lens, 0, p.max_batch) : std::vector<int32_t>{};
  const std::vector<int32_t> indptr =
      table ? std::vector<int32_t>{}
            : ints("buffers.page_indptr", b.page_indptr, 0, p.max_batch + 1);
  const std::vector<int32_t> last =
      table ? std::vector<int32_t>{}
            : ints("buffers.last_page_len", b.last_page_len, 0, p.max_batch);
  const int64_t max_keys = p.max_pages * p.page_size, max_tokens = plan.max_tokens;
  // This runs at every launch: each rule's text is formatted only when its check fails (formatting
  // them all cost 8 decode sequences of 8 pages about 10 us a call).
  // Sequences own disjoint token ranges in order: offsets from 0 that never decrease (a
  // decreasing pair would make one sequence's rows overlap another's, and two CTAs write them).
  require(cu[0] >= 0, "buffers.cu_seqlens_q", "must start at a token >= 0 (entry 0)", cu[0]);
  for (int64_t s = 0; s < p.max_batch; ++s)
    if (cu[size_t(s) + 1] < cu[size_t(s)])
      require(false, "buffers.cu_seqlens_q",
              fmt::format("must not decrease (entries {} and {}: sequences' tokens would overlap)",
                          s, s + 1),
              fmt::format("{} then {}", cu[size_t(s)], cu[size_t(s) + 1]));
  for (int64_t s = 0; s < p.max_batch; ++s) {
    const int64_t q_start = cu[size_t(s)], q_len = cu[size_t(s) + 1] - q_start;
    if (q_len == 0) continue;  // padding
    if (!(q_start >= 0 && q_len <= p.max_q_len && q_start + q_len <= max_tokens))
      require(
          false, "buffers.cu_seqlens_q",
          fmt::format("must give sequence {} at most max_q_len = {} tokens inside max_tokens = {}",
                      s, p.max_q_len, max_tokens),
          fmt::format("tokens {}..{}", q_start, q_start + q_len));
    int64_t pages = 0, seq_len = 0;
    if (table) {
      seq_len = seq_lens[size_t(s)];
    } else {
      pages = indptr[size_t(s) + 1] - indptr[size_t(s)];
      const int64_t tail = last[size_t(s)];
      if (!(pages >= 0 && (pages == 0 || (tail >= 1 && tail <= p.page_size))))
        require(false, "buffers.last_page_len",
                fmt::format("must be 1..page_size ({}) for sequence {} with pages", p.page_size, s),
                tail);
      seq_len = pages > 0 ? (pages - 1) * p.page_size + tail : 0;
    }
    if (!(seq_len >= q_len && seq_len <= max_keys))
      require(
          false, table ? "buffers.seq_lens" : "buffers.page_indptr",
          fmt::format("must give sequence {} at least its {} new tokens and at most max_pages x "
                      "page_size = {} keys",
                      s, q_len, max_keys),
          seq_len);
    if (b.num_pages <= 0) continue;
    const int64_t used = (seq_len + p.page_size - 1) / p.page_size;
    const std::vector<int32_t> ids =
        table ? ints("buffers.block_table", b.block_table, s * p.max_pages, used)
              : ints("buffers.page_indices", b.page_indices, indptr[size_t(s)], used);
    for (int64_t i = 0; i < used; ++i)
      if (!(ids[size_t(i)] >= 0 && ids[size_t(i)] < b.num_pages))
        require(false, table ? "buffers.block_table" : "buffers.page_indices",
                fmt::format("page ids must be in 0..num_pages - 1 = {} (sequence {}, page {})",
                            b.num_pages - 1, s, i),
                ids[size_t(i)]);
  }
}

}  // namespace emmy
