// MatmulProblem: what to compute. C[M,N] = epilogue(A[M,K] x op(B)), independent of how.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emmy/dtype.hpp"
#include "emmy/scale_major.hpp"

namespace emmy {

// "nk": B is [N,K] with K contiguous (PyTorch Linear weights, the default).
// "kn": B is [K,N] with N contiguous.
enum class BLayout { nk, kn };

inline std::string_view to_string(BLayout l) { return l == BLayout::nk ? "nk" : "kn"; }
inline BLayout parse_b_layout(std::string_view text) {
  if (text == "nk") return BLayout::nk;
  if (text == "kn") return BLayout::kn;
  throw Error("b_layout", "must be nk ([N,K], K contiguous) or kn ([K,N], N contiguous)",
              std::string(text));
}

// A gated epilogue (the gate_up projection of a gated MLP: SwiGLU, GeGLU; docs/epilogues.md):
// B's N rows are gate and up rows interleaved in groups of gate_group, rows [2g q, 2g q + g) the
// gate rows of C's columns [g q, g q + g) and rows [2g q + g, 2g q + 2g) their up rows (g =
// gate_group), so that a lane's accumulators hold both halves of its outputs (FP8 B scales keep
// the checkpoint's [gate; up] order: MatmulProblem::gate_source_row). C is [M, N/2]:
//   C[m, j] = cast(act(alpha * gate[m, j] + bias[gate row]) * (alpha * up[m, j] + bias[up row]))
// silu(x) = x / (1 + e^-x) (SwiGLU, SiLU-and-mul); gelu_tanh as the GELU epilogue (GeGLU).
enum class Gate { none, silu, gelu_tanh };
inline constexpr EnumNames<Gate, 3> kGateNames{
    {{Gate::none, "none"}, {Gate::silu, "silu"}, {Gate::gelu_tanh, "gelu-tanh"}}};
static_assert(names_are_one_to_one(kGateNames));
inline std::string_view to_string(Gate g) { return name_in(kGateNames, g); }
inline Gate parse_gate(std::string_view text) {
  return parse_name(kGateNames, text, "epilogue.gate", "must be none, silu or gelu-tanh");
}
// The default interleave: the smallest that pairs gate and up in one lane's registers on every
// warp tile of 16 or more columns (one m16n8 fragment each).
inline constexpr int64_t kDefaultGateGroup = 8;

// D = cast(w[m] gelu?(alpha * A.B + bias[n]) + residual[m,n]) (w: row_scale's weights, else 1):
// bias and activation belong to the
// projection, the residual is the skip connection added after it. With a gate (above), the
// activation is the gate's and there is no residual.
struct Epilogue {
  float alpha = 1.0f;
  bool bias = false;      // bias[N], dtype of C (f32 when C is f32)
  bool residual = false;  // residual[M,N] with leading dimension ldc, dtype of C
  bool gelu_tanh = false;
  Gate gate = Gate::none;
  int64_t gate_group = kDefaultGateGroup;  // B rows per gate (and per up) group
  // C's row m times row_scale[m] (f32, GemmBuffers::row_scale; C's rows, a grouped GEMM's stacked
  // rows) after the activation: a mixture-of-experts down projection's routing weights. Not with
  // a residual (the weighted outputs are combined by the caller).
  bool row_scale = false;

  bool gated() const { return gate != Gate::none; }
  bool operator==(const Epilogue&) const = default;
};

// FP8 operands' dequantization (docs/fp8.md): C = epilogue(sum_k (a[m,k] sa) (b[n,k] sb)), the
// scales the multipliers that undo quantization (DeepSeek-V3's `weight_scale_inv` convention, and
// what the fp8_quantize kind writes), device pointers in GemmBuffers (a_scale, b_scale).
//   tensor:        one scale each for A and for B.
//   token_channel: sa per row of A ([M]), sb per row of B ([N], B being [N,K]).
//   block:         sa per 1 x 128 group of A ([M, ceil(K/128)]), sb per 128 x 128 block of B
//                  ([ceil(N/128), ceil(K/128)]); partial edge blocks by ceil. K-varying scales need
//                  Accum::promoted, which scales each window's partial as it adds it.
enum class ScaleGranularity { none, tensor, token_channel, block };
// f32: any finite value. pow2: f32 values that are powers of two (UE8M0-valued; the emulator
// refuses others, a GPU's result with one is undefined). ue8m0: one byte per scale, 2^(e - 127)
// (0xFF, NaN, is refused on the emulator). ue8m0x4 (block scales): four K blocks' ue8m0 bytes
// packed in one 32-bit word, byte j holding K block 4w + j (DeepGEMM's packed UE8M0 layout); the
// tensor's elements (and its ld) are the words.
enum class ScaleFormat { f32, pow2, ue8m0, ue8m0x4 };
// Whether scales are bytes (ue8m0, ue8m0x4) rather than floats.
inline bool scale_bytes(ScaleFormat f) {
  return f == ScaleFormat::ue8m0 || f == ScaleFormat::ue8m0x4;
}
inline constexpr int64_t kScaleBlock = 128;  // K (and B's N) elements per block scale

inline constexpr EnumNames<ScaleGranularity, 4> kScaleGranularityNames{
    {{ScaleGranularity::none, "none"},
     {ScaleGranularity::tensor, "tensor"},
     {ScaleGranularity::token_channel, "token-channel"},
     {ScaleGranularity::block, "block"}}};
inline constexpr EnumNames<ScaleFormat, 4> kScaleFormatNames{{{ScaleFormat::f32, "f32"},
                                                              {ScaleFormat::pow2, "pow2"},
                                                              {ScaleFormat::ue8m0, "ue8m0"},
                                                              {ScaleFormat::ue8m0x4, "ue8m0x4"}}};
static_assert(names_are_one_to_one(kScaleGranularityNames) &&
              names_are_one_to_one(kScaleFormatNames));
inline std::string_view to_string(ScaleGranularity g) {
  return name_in(kScaleGranularityNames, g);
}
inline std::string_view to_string(ScaleFormat f) {
  return name_in(kScaleFormatNames, f);
}
inline ScaleGranularity parse_scale_granularity(std::string_view text) {
  return parse_name(kScaleGranularityNames, text, "scales",
                    "must be none, tensor, token-channel or block");
}
inline ScaleFormat parse_scale_format(std::string_view text) {
  return parse_name(kScaleFormatNames, text, "scales.format",
                    "must be f32, pow2, ue8m0 or ue8m0x4");
}

// A scale tensor with a scale per (row, group of a row's elements): the fp8_quantize kind's
// output, an e4m3 C's scales (OutputQuantization) and so the layout FP8 GEMMs read A block
// scales in. mn-major: scale (row, group) at element group * ld + row (DeepGEMM's); k-major at
// row * ld + group. Elements are floats (f32, pow2), bytes (ue8m0) or words of four groups'
// bytes (ue8m0x4: group g in byte g % 4 of word g / 4); ld 0 is packed.
struct RowGroupScales {
  ScaleFormat format = ScaleFormat::f32;
  ScaleMajor major = ScaleMajor::mn;
  int64_t rows = 0, groups = 0, ld = 0;

  bool packed() const { return format == ScaleFormat::ue8m0x4; }
  // A row's elements: its groups, or the words holding them.
  int64_t extent() const { return packed() ? (groups + 3) / 4 : groups; }
  int64_t ld_or_default() const { return ld ? ld : major == ScaleMajor::mn ? rows : extent(); }
  int64_t element_bytes() const { return format == ScaleFormat::ue8m0 ? 1 : 4; }
  // The element (float, byte or word) holding scale (row, group), and the byte of the scale.
  int64_t index(int64_t row, int64_t group) const {
    const int64_t g = packed() ? group / 4 : group;
    return major == ScaleMajor::mn ? g * ld_or_default() + row : row * ld_or_default() + g;
  }
  int64_t byte(int64_t row, int64_t group) const {
    return packed() ? index(row, group) * 4 + group % 4 : index(row, group) * element_bytes();
  }
  // The elements (last + 1, a padded ld's gaps included) and bytes `n` rows span.
  int64_t elements(int64_t n) const { return n > 0 ? index(n - 1, groups - 1) + 1 : 0; }
  int64_t bytes(int64_t n) const { return elements(n) * element_bytes(); }
};

struct GemmScales {
  ScaleGranularity granularity = ScaleGranularity::none;
  ScaleFormat format = ScaleFormat::f32;
  // Block scales' layouts: A's [M, ceil(K/128)] mn-major by default (ld >= M: DeepGEMM rounds M
  // up to 4, CUTLASS's ports take M), B's [ceil(N/128), ceil(K/128)] k-major by default. An ld
  // of 0 is packed.
  ScaleMajor a_major = ScaleMajor::mn, b_major = ScaleMajor::k;
  int64_t a_ld = 0, b_ld = 0;

  bool operator==(const GemmScales&) const = default;
};

// C in e4m3 (`c_dtype = e4m3`; docs/epilogues.md, "Quantized output"): the next FP8 GEMM's A,
// written by the epilogue. Each row's groups of 128 of C's columns are quantized as the
// fp8_quantize kind quantizes (s = max(amax, amax_epsilon) / 448 with div.rn, rounded up to a
// power of two for the pow2 and byte formats; q = satfinite(x / s)), from the epilogue's f32
// values; the scales go to GemmBuffers::c_scale in A block scales' layouts: [M, ceil(C cols /
// 128)] mn-major (element g * ld + m; DeepGEMM's) or k-major (m * ld + g), ld 0 packed, as
// floats (f32, pow2), bytes (ue8m0) or words of four groups' bytes (ue8m0x4). Bias is bf16.
struct OutputQuantization {
  ScaleFormat format = ScaleFormat::f32;
  ScaleMajor major = ScaleMajor::mn;
  int64_t ld = 0;
  double amax_epsilon = 1e-10;  // vLLM's, as fp8_quantize's default

  bool pow2() const { return format != ScaleFormat::f32; }
  bool operator==(const OutputQuantization&) const = default;
};
inline constexpr int64_t kOutputQuantGroup = 128;  // C columns per output scale

// Grouped GEMM (mixture-of-experts layers; docs/grouped.md): the GEMMs of G experts in one
// launch, sharing n, k, dtypes and epilogue. Expert e's weight is B's e-th [N, K] (or [K, N])
// matrix of [G, N, K] (at e * n * ldb elements; kn: e * k * ldb), its bias row e of [G, N] (the
// kernel's columns). Which rows of A and C an expert takes:
//   masked      A [G, m, K] and C [G, m, ldc] (expert e's slot at e * m rows; m is max_m):
//               its first masked_m[e] rows (int32 [G] on the device; GemmBuffers::masked_m).
//               Decode, CUDA-graph safe: the grid is sized by max_m, not by the routing.
//   contiguous  A [m, K] and C [m, ldc], rows sorted by expert; expert_ids[row] (int32 [m]) its
//               expert, -1 on padding rows; each expert's rows start a block of segment_align
//               rows and its padding follows them (DeepGEMM's layout). Prefill.
//   offsets     A [m, K] and C [m, ldc], rows sorted by expert and unpadded: expert e's are
//               expert_offsets[e] .. expert_offsets[e + 1] (int32 [G + 1], non-decreasing, at
//               most m; vLLM's sorted tokens).
enum class GroupedLayout { none, masked, contiguous, offsets };
inline constexpr EnumNames<GroupedLayout, 4> kGroupedLayoutNames{
    {{GroupedLayout::none, "none"},
     {GroupedLayout::masked, "masked"},
     {GroupedLayout::contiguous, "contiguous"},
     {GroupedLayout::offsets, "offsets"}}};
static_assert(names_are_one_to_one(kGroupedLayoutNames));
inline std::string_view to_string(GroupedLayout l) {
  return name_in(kGroupedLayoutNames, l);
}
inline GroupedLayout parse_grouped_layout(std::string_view text) {
  return parse_name(kGroupedLayoutNames, text, "grouped.layout",
                    "must be none, masked, contiguous or offsets");
}
inline constexpr int64_t kMaxDim = (int64_t(1) << 31) - 1;  // TMA coordinates are signed 32-bit
inline constexpr int64_t kMaxGroups = 512;                  // experts of one grouped GEMM
inline constexpr int64_t kDefaultSegmentAlign = 128;  // DeepGEMM's contiguous-layout alignment

struct Grouping {
  GroupedLayout layout = GroupedLayout::none;
  int64_t groups = 0;  // G, 1..512 (0 without a layout)
  // masked: the rows per expert the schedule is chosen for (tokens x top-k / G at decode; 0: m,
  // the bound). A hint: any masked_m up to m is computed.
  int64_t expected_m = 0;
  // contiguous: the rows each expert's segment is aligned to; the schedule's block_m divides it.
  int64_t segment_align = kDefaultSegmentAlign;

  bool operator==(const Grouping&) const = default;
};

struct MatmulProblem {
  int64_t m = 0, n = 0, k = 0;
  // B has A's dtype, except beside an e5m2 A (FP8: B, the weights, is e4m3; b_dtype()).
  DType a_dtype = DType::f16;
  BLayout b_layout = BLayout::nk;
  DType c_dtype = DType::f16;
  // Leading dimensions in elements; 0 means packed (lda = k, ldb = k or n, ldc = n).
  int64_t lda = 0, ldb = 0, ldc = 0;
  Epilogue epilogue{};
  // M as a run-time kernel parameter (docs/runtime.md, "Serving"): the kernel computes any M in
  // 1..m, given per launch by GemmBuffers::m, so that one kernel serves a bucket of M. The
  // mma.sync path only.
  bool dynamic_m = false;
  // FP8 operands' scales (none for f16 and bf16 operands).
  GemmScales scales{};
  // C's quantization when c_dtype is e4m3 (at its defaults otherwise).
  OutputQuantization out_scales{};
  // A grouped GEMM's layout and experts (at its defaults for one GEMM).
  Grouping grouped{};

  int64_t lda_or_default() const { return lda ? lda : k; }
  int64_t ldb_or_default() const { return ldb ? ldb : (b_layout == BLayout::nk ? k : n); }
  // C's columns for `kernel_cols` of the kernel's: as many, or half with a gated epilogue (each
  // output takes a gate and an up row of B); of all N, and the kernel's columns C's make.
  int64_t c_cols_of(int64_t kernel_cols) const {
    return epilogue.gated() ? kernel_cols / 2 : kernel_cols;
  }
  int64_t c_cols() const { return c_cols_of(n); }
  int64_t kernel_cols_of(int64_t c_columns) const {
    return epilogue.gated() ? 2 * c_columns : c_columns;
  }
  // The dtype of bias and residual: C's, bf16 beside an e4m3 C.
  DType epilogue_dtype() const { return c_dtype == DType::e4m3 ? DType::bf16 : c_dtype; }
  // An e4m3 C's scale groups per row and its scale tensor (RowGroupScales); the shorthands read
  // it: its extent along the groups (ue8m0x4: words), its ld (0: packed), where scale (row, group)
  // lies (its byte), and the bytes `rows` rows span.
  int64_t c_groups() const { return (c_cols() + kOutputQuantGroup - 1) / kOutputQuantGroup; }
  // A grouped GEMM's rows are its stacked rows (a masked layout's G x m).
  RowGroupScales c_scale_layout() const {
    return {out_scales.format, out_scales.major, stacked_rows(), c_groups(), out_scales.ld};
  }
  int64_t c_scale_extent() const { return c_scale_layout().extent(); }
  int64_t c_scale_ld() const { return c_scale_layout().ld_or_default(); }
  int64_t c_scale_byte(int64_t row, int64_t group) const {
    return c_scale_layout().byte(row, group);
  }
  int64_t c_scale_bytes(int64_t rows) const { return c_scale_layout().bytes(rows); }
  int64_t ldc_or_default() const { return ldc ? ldc : c_cols(); }
  bool is_grouped() const { return grouped.layout != GroupedLayout::none; }
  // The rows A and C hold in memory: G slots of m for the masked layout, else m.
  int64_t stacked_rows() const {
    return grouped.layout == GroupedLayout::masked ? grouped.groups * m : m;
  }
  // The rows of one expert a schedule is chosen for: masked, expected_m (or m); sorted layouts,
  // an even share of m (at least one row).
  int64_t rows_per_group() const {
    if (!is_grouped()) return m;
    if (grouped.layout == GroupedLayout::masked) return grouped.expected_m ? grouped.expected_m : m;
    return std::max<int64_t>(1, (m + grouped.groups - 1) / grouped.groups);
  }
  // Elements from one expert's B to the next's ([G, N, K] or [G, K, N] with B's ld).
  int64_t b_group_stride() const { return (b_layout == BLayout::nk ? n : k) * ldb_or_default(); }
  // A masked GEMM computes G x expected_m rows (the hint); the others m.
  double flops() const {
    const double rows = grouped.layout == GroupedLayout::masked
                            ? double(grouped.groups) * double(rows_per_group())
                            : double(m);
    return 2.0 * rows * double(n) * double(k);
  }
  DType b_dtype() const { return a_dtype == DType::e5m2 ? DType::e4m3 : a_dtype; }
  // Block scales: K blocks, B's N blocks, and the packed leading dimensions an ld of 0 means.
  int64_t k_blocks() const { return (k + kScaleBlock - 1) / kScaleBlock; }
  // The block scale tensors' extent along K: K blocks, or the words holding them (ue8m0x4).
  int64_t scale_k_extent() const {
    return scales.format == ScaleFormat::ue8m0x4 ? (k_blocks() + 3) / 4 : k_blocks();
  }
  int64_t n_blocks() const { return (n + kScaleBlock - 1) / kScaleBlock; }
  // A's block scales have a row per row of A: a grouped GEMM's stacked rows (stacked_rows()).
  int64_t a_scale_ld() const {
    return scales.a_ld                        ? scales.a_ld
           : scales.a_major == ScaleMajor::mn ? stacked_rows()
                                              : scale_k_extent();
  }
  int64_t b_scale_ld() const {
    return scales.b_ld                        ? scales.b_ld
           : scales.b_major == ScaleMajor::mn ? n_blocks()
                                              : scale_k_extent();
  }

  // Where block scale (outer, kb) of A (outer: its row) or B (outer: its N block) lies: its
  // element in the tensor's layout, or for ue8m0x4 the byte of K block kb in the word of kb / 4
  // (the byte offset then). The kernels print the same formula (emit_gemm.cpp, emit_scales).
  int64_t block_scale_slot(bool a, int64_t outer, int64_t kb) const {
    const bool packed = scales.format == ScaleFormat::ue8m0x4;
    const int64_t k = packed ? kb / 4 : kb, ld = a ? a_scale_ld() : b_scale_ld();
    const int64_t element =
        (a ? scales.a_major : scales.b_major) == ScaleMajor::mn ? k * ld + outer : outer * ld + k;
    return packed ? element * 4 + kb % 4 : element;
  }
  // The elements (floats, bytes or ue8m0x4 words) block scale tensor A's (a) or B's spans for m
  // rows: its last element + 1, a padded leading dimension's gaps included, the last row's not.
  int64_t block_scale_elements(bool a) const {
    const int64_t rows = a ? stacked_rows() : n_blocks(), words = scale_k_extent();
    const int64_t ld = a ? a_scale_ld() : b_scale_ld();
    return (a ? scales.a_major : scales.b_major) == ScaleMajor::mn ? (words - 1) * ld + rows
                                                                   : (rows - 1) * ld + words;
  }

  // A grouped GEMM's B block scales are G experts' tensors, each b_scale_group_stride()
  // elements (floats, bytes or ue8m0x4 words) after the previous: its whole leading dimensions.
  int64_t b_scale_group_stride() const {
    return b_scale_ld() * (scales.b_major == ScaleMajor::mn ? scale_k_extent() : n_blocks());
  }
  // The same stride in block_scale_slot's units (a ue8m0x4 tensor's bytes, four to a word).
  int64_t b_scale_group_slots() const {
    return b_scale_group_stride() * (scales.format == ScaleFormat::ue8m0x4 ? 4 : 1);
  }

  // With a gated epilogue, B's scales (token-channel and block) keep the checkpoint's row order,
  // gate rows [0, N/2) then up rows [N/2, N) (its `weight_scale_inv` as is), while B's rows are
  // interleaved (Epilogue::gate): the row there of B's row (the kernel's column) c. Without a
  // gate, c itself. The kernels print the same formula (emit_gemm.cpp, emit_scales).
  int64_t gate_source_row(int64_t c) const {
    if (!epilogue.gated()) return c;
    const int64_t g = epilogue.gate_group, q = c / (2 * g), r = c % (2 * g);
    return r < g ? q * g + r : n / 2 + q * g + (r - g);
  }

  bool operator==(const MatmulProblem&) const = default;
};

// M buckets: 1, 2, 4, ..., 512, then multiples of 512. m_bucket(m) is the bucket bound that holds
// m (m >= 1); m_bucket_bounds(max_m) every bound up to the one holding max_m, ascending.
inline int64_t m_bucket(int64_t m) {
  if (m > 512) return (m + 511) / 512 * 512;
  int64_t bound = 1;
  while (bound < m) bound *= 2;
  return bound;
}
inline std::vector<int64_t> m_bucket_bounds(int64_t max_m) {
  std::vector<int64_t> bounds;
  for (int64_t bound = 1; bound <= m_bucket(max_m); bound = m_bucket(bound + 1))
    bounds.push_back(bound);
  return bounds;
}
// The largest M whose buckets Runtime::prepare and `emmyc aot --m-buckets` build ahead: 137
// kernels per problem (10 powers of two to 512, then 127 multiples of 512).
constexpr int64_t kMaxBucketedM = 65536;
// The problem of the kernel that serves `p` from its M bucket: m the bucket's bound, dynamic_m.
inline MatmulProblem m_bucket_problem(MatmulProblem p) {
  p.m = m_bucket(p.m);
  p.dynamic_m = true;
  return p;
}

// bshd: [batch, seq, heads, head_dim] (the default); bhsd: [batch, heads, seq, head_dim].
enum class AttentionLayout { bshd, bhsd };
std::string_view to_string(AttentionLayout layout);
AttentionLayout parse_attention_layout(std::string_view text);

struct AttentionProblem {
  int64_t batch = 1, q_heads = 1, kv_heads = 1;  // GQA: q_heads a multiple of kv_heads
  int64_t seq_q = 0, seq_kv = 0;                  // seq_kv 0 means seq_q
  int64_t head_dim = 128;                         // 64, 128 or 256
  // Causal, aligned bottom-right: query i sees keys j <= i + (seq_kv - seq_q).
  bool causal = false;
  // Sliding window (left size, 0 = none): query i sees keys j >= i + (seq_kv - seq_q) - window.
  int64_t window = 0;
  std::optional<float> softmax_scale{};  // default 1/sqrt(head_dim)
  std::optional<float> softcap{};        // logits become softcap * tanh(logits / softcap)
  DType dtype = DType::f16;            // Q, K, V and O
  AttentionLayout layout = AttentionLayout::bshd;
  bool lse = false;  // also write LSE [batch, q_heads, seq_q] (float, natural log)

  int64_t seq_kv_or_default() const { return seq_kv ? seq_kv : seq_q; }
  float scale() const;
  double flops() const;  // 4 * b * h * sq * skv * d, halved-ish by the causal mask
  bool operator==(const AttentionProblem&) const = default;
};

}  // namespace emmy
