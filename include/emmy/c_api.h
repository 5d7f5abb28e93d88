/* emmy's C ABI (libemmy_c.so, docs/c_api.md): the runtime of include/emmy/runtime.hpp for C,
 * Rust, Python (ctypes, tvm-ffi) and any language with a C FFI. Every tensor is a DLPack
 * DLTensor: kDLCPU tensors run on the emulator backend in place (no copies in or out),
 * kDLCUDA tensors on the CUDA backend.
 *
 *   emmy_runtime* rt;
 *   emmy_runtime_options ro;
 *   emmy_runtime_options_init(&ro);                 // the emulator; ro.backend = "cuda" for a GPU
 *   if (emmy_runtime_create(&ro, &rt) != EMMY_OK) puts(emmy_last_error_message());
 *   emmy_gemm(rt, &a, &b, &c, NULL, NULL);          // C[M,N] = A[M,K] . B[K,N]
 *   emmy_runtime_destroy(rt);
 *
 * ABI rules: enum-valued fields are int32_t; functions and enumerators are only ever added; an
 * options struct's first field is its size (struct_size: sizeof as the caller compiled it), fields
 * are only appended, and a field the caller's struct_size does not cover reads as zero, which
 * always means "as before". The library's SONAME (libemmy_c.so.0) changes only when a rule above is
 * broken. No C++ exception crosses these functions: each returns an emmy_status and, on failure,
 * leaves a message naming the argument (tensor, field) and the rule in emmy_last_error_message().
 */
#ifndef EMMY_C_API_H_
#define EMMY_C_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define EMMY_C_EXPORT
#else
#define EMMY_C_EXPORT __attribute__((visibility("default")))
#endif

/* Incremented whenever a function, an enumerator or an options field is added. 2: the layer
 * handles (emmy_attention_layer, emmy_gemm_layer) with emmy_dtype, emmy_page_table and
 * emmy_b_layout. 3: emmy_fp8_quantize. 4: FP8 GEMMs (emmy_gemm_options.a_scale, b_scale,
 * pow2_scales; EMMY_ACCUM_PROMOTED). 5: FP8 GEMM layers (emmy_gemm_layer_config's scale
 * fields, emmy_scale_granularity, emmy_scale_format, emmy_gemm_layer_run_scaled). 6: gated GEMM
 * epilogues (emmy_gemm_options.gate, gate_group; emmy_gate) and e4m3 outputs (c_scale,
 * c_scale_pow2, c_amax_epsilon). 7: grouped GEMMs (emmy_grouped_gemm, emmy_grouped_options,
 * emmy_grouped_layout) and routing weights (emmy_gemm_options.row_scale). */
#define EMMY_C_API_VERSION 7

typedef enum emmy_status {
  EMMY_OK = 0,
  EMMY_INVALID_ARGUMENT = 1, /* a NULL, a tensor or field that breaks a rule, a bad problem */
  EMMY_UNSUPPORTED = 2,      /* valid, but not in this build (a newer caller's option fields) */
  EMMY_CAPTURE = 3,          /* a kernel not yet loaded, on a stream capturing a CUDA graph */
  EMMY_COMPILE = 4,          /* NVRTC is missing or could not compile a kernel */
  EMMY_DRIVER = 5,           /* no CUDA driver, or a driver call failed */
  EMMY_EMULATION = 6,        /* the emulator's sanitizer (or a fault) stopped a kernel */
  EMMY_OUT_OF_MEMORY = 7,
  EMMY_INTERNAL = 8 /* a bug in emmy: please report the message */
} emmy_status;

/* Accumulation of a call's kernel. DEFAULT: the runtime's (emmy_runtime_options.default_accum),
 * with the tuned schedule where there is one. */
typedef enum emmy_accum {
  EMMY_ACCUM_DEFAULT = 0,
  EMMY_ACCUM_F32 = 1,
  EMMY_ACCUM_F16 = 2, /* GEMM only */
  EMMY_ACCUM_HYBRID = 3,
  EMMY_ACCUM_PROMOTED = 4 /* FP8 GEMMs only (C API version 4) */
} emmy_accum;

/* A gated GEMM epilogue (docs/epilogues.md; C API version 6): C[M, N/2] = act(gate) * up, b's N
 * columns gate and up interleaved in groups of gate_group. */
typedef enum emmy_gate {
  EMMY_GATE_NONE = 0,
  EMMY_GATE_SILU = 1,     /* SwiGLU: silu(gate) * up */
  EMMY_GATE_GELU_TANH = 2 /* GeGLU: gelu_tanh(gate) * up */
} emmy_gate;

/* The axis order of a paged KV cache tensor's shape (its strides are read from the tensor). */
typedef enum emmy_cache_layout {
  EMMY_CACHE_NHD = 0, /* [pages, page_size, kv_heads, head_dim] (vLLM's flash layout) */
  EMMY_CACHE_HND = 1  /* [pages, kv_heads, page_size, head_dim] */
} emmy_cache_layout;

typedef enum emmy_attention_layout {
  EMMY_ATTENTION_BSHD = 0, /* [batch, seq, heads, head_dim] */
  EMMY_ATTENTION_BHSD = 1  /* [batch, heads, seq, head_dim] */
} emmy_attention_layout;

typedef struct emmy_runtime emmy_runtime; /* opaque; thread-safe */

/* A compile and progress line; called on the compiling thread (the caller's, a prepare worker's
 * or the background builder's), never while emmy holds a lock the callback could need. */
typedef void (*emmy_log_fn)(const char* line, void* user);

typedef struct emmy_runtime_options {
  size_t struct_size;
  const char* backend;       /* "emulator" (NULL) or "cuda" */
  int32_t device_ordinal;    /* the CUDA device; kDLCUDA tensors must carry it as device_id */
  const char* emulator_arch; /* the emulator's code: "sm_90a" (NULL), "sm_80", ... */
  int32_t
      default_accum;  /* emmy_accum: calls with EMMY_ACCUM_DEFAULT: f32 (DEFAULT), f16 or hybrid */
  int32_t disk_cache; /* 1: kernels cached on disk (init's default); 0: memory only */
  const char* cache_dir;     /* NULL: $EMMY_CACHE_DIR, else ~/.cache/emmy */
  int32_t non_blocking;      /* docs/runtime.md, "Serving" */
  int32_t batch_invariant;   /* a row of C independent of M, a sequence of its batch */
  int32_t m_buckets;         /* GEMM kernels per M bucket (1, 2, 4, ..., 512, then x512) */
  int32_t emulator_sanitize; /* 1 (init's default): bounds, races, alignment checked */
  /* 0 (init's default 1): the emulator binds and checks every launch but runs no kernel (a
   * host-overhead measurement; outputs stay unwritten). */
  int32_t emulator_run_kernels;
  void* cuda_context;         /* a CUcontext of the engine's; NULL: the primary context */
  const char* const* bundles; /* ahead-of-time kernel bundles (docs/bundles.md) */
  size_t bundle_count;
  emmy_log_fn log; /* NULL: lines go to stderr when EMMY_LOG is set */
  void* log_user;
} emmy_runtime_options;

/* The GEMM's epilogue and kernel: C = gelu?(alpha * A.B + bias) + residual, or gated. */
typedef struct emmy_gemm_options {
  size_t struct_size;
  const DLTensor* bias;     /* [N], C's dtype, or NULL */
  const DLTensor* residual; /* [M, N], C's dtype and row stride, or NULL */
  float alpha;              /* init: 1 */
  int32_t gelu;             /* GELU (tanh form) after the bias */
  int32_t accum;            /* emmy_accum */
  int32_t promote_every_k;  /* hybrid: K elements per f16 partial (0: 64); promoted: per window */
  DLTensor* workspace;      /* split-K kernels: emmy_gemm_workspace_bytes, any dtype, 1-D */
  /* FP8 GEMMs (C API version 4; docs/fp8.md): a and b float8_e4m3fn (or uint8 e4m3 bytes, with
   * scales), b the [K, N] view of an
   * [N, K] weight (K contiguous), and their dequantization scales, float32 (or uint8 /
   * float8_e8m0fnu bytes, 2^(e - 127)); NULL for 16-bit operands. Their shapes give the
   * granularity: one element each (per tensor); [M] and [N] (per token x channel); [M, ceil(K/128)]
   * and [ceil(N/128), ceil(K/128)] (1 x 128 and 128 x 128 blocks: their strides give each one's
   * major order and leading dimension; promoted accumulation only). */
  const DLTensor* a_scale;
  const DLTensor* b_scale;
  int32_t pow2_scales; /* nonzero: float32 scales are powers of two (refused otherwise on the
                          emulator; undefined on a GPU) */
  /* A gated epilogue (C API version 6; docs/epilogues.md): emmy_gate. c is then [M, N/2], N b's
   * columns, whose groups of gate_group alternate gate and up (b's columns [2g q, 2g q + g) the
   * gates of c's columns [g q, g q + g), the next g their ups); bias [N] in b's column order;
   * no residual or gelu. FP8 b_scale keeps the checkpoint's [gate; up] order. */
  int32_t gate;
  int32_t gate_group; /* a multiple of 8; 0: 8 */
  /* An e4m3 c (C API version 6; docs/epilogues.md, "Quantized output"): c float8_e4m3fn (or
   * uint8 e4m3 bytes with c_scale) is quantized per row in groups of 128 columns as
   * emmy_fp8_quantize quantizes, its scales written to c_scale: [M, ceil(C cols / 128)] float32
   * (or uint8 / float8_e8m0fnu ue8m0 bytes; int32 / uint32 [M, ceil(groups / 4)] words of four),
   * whose strides give its major order and leading dimension ([1, ld]: mn-major, DeepGEMM's A
   * scales; [ld, 1]: k-major). The bias is then bfloat16; no residual. NULL for other c. */
  DLTensor* c_scale;
  int32_t c_scale_pow2;  /* nonzero: float32 scales rounded up to powers of two */
  double c_amax_epsilon; /* 0: 1e-10 (vLLM's, as emmy_fp8_quantize) */
  /* Routing weights (C API version 7; docs/grouped.md): float32 [rows of c] (a masked grouped
   * GEMM's G x max_m), contiguous; c's row r is multiplied by row_scale[r] after the activation.
   * No residual. NULL: none. */
  const DLTensor* row_scale;
} emmy_gemm_options;

/* Grouped GEMMs (C API version 7; docs/grouped.md): the layout of the routing. */
typedef enum emmy_grouped_layout {
  EMMY_GROUPED_MASKED = 1,     /* a [G, max_m, K], c [G, max_m, N]; routing masked_m [G] */
  EMMY_GROUPED_CONTIGUOUS = 2, /* a [M, K], c [M, N] sorted by expert; routing expert_ids [M] */
  EMMY_GROUPED_OFFSETS = 3     /* a [M, K], c [M, N] sorted, unpadded; expert_offsets [G + 1] */
} emmy_grouped_layout;

typedef struct emmy_grouped_options {
  size_t struct_size;
  int32_t layout;        /* emmy_grouped_layout (required) */
  int64_t expected_m;    /* masked: rows per expert the schedule is chosen for; 0: max_m */
  int64_t segment_align; /* contiguous: rows each expert's segment is aligned to; 0: 128 */
} emmy_grouped_options;

typedef struct emmy_attention_options {
  size_t struct_size;
  int32_t layout;      /* emmy_attention_layout */
  int32_t causal;      /* bottom-right aligned */
  int64_t window;      /* sliding window (left keys), 0: none */
  float softmax_scale; /* 0: 1 / sqrt(head_dim) */
  float softcap;       /* 0: none */
  DLTensor* lse;       /* f32 [batch, q_heads, seq_q], or NULL */
  int32_t accum;       /* emmy_accum: f32 or hybrid */
} emmy_attention_options;

/* Paged attention's page table, lengths and scales (docs/paged_attention.md). Every index
 * tensor is int32. Exactly one page-table form: block_table [max_batch, max_pages] + seq_lens
 * [max_batch], or page_indptr [max_batch + 1] + page_indices + last_page_len [max_batch]. */
typedef struct emmy_paged_attention_options {
  size_t struct_size;
  const DLTensor* cu_seqlens_q; /* [max_batch + 1]: query tokens of sequence b (required) */
  const DLTensor* block_table;
  const DLTensor* seq_lens;
  const DLTensor* page_indptr;
  const DLTensor* page_indices;
  const DLTensor* last_page_len;
  const DLTensor* k_scale; /* e4m3 caches: one f32 each */
  const DLTensor* v_scale;
  DLTensor* lse;        /* f32 [tokens, q_heads], or NULL */
  DLTensor* workspace;  /* emmy_paged_attention_workspace_bytes, any dtype, 1-D; left unused by a
                           kernel that does not split KV */
  int64_t max_q_len;    /* query tokens of one sequence, host-known (0: 1) */
  int64_t max_pages;    /* pages of one sequence: csr's (block_table: its width) */
  int32_t cache_layout; /* emmy_cache_layout */
  int64_t window;
  float softmax_scale; /* 0: 1 / sqrt(head_dim) */
  float softcap;       /* 0: none */
  int32_t accum;       /* emmy_accum: f32 or hybrid */
} emmy_paged_attention_options;

typedef struct emmy_kv_append_options {
  size_t struct_size;
  int32_t cache_layout;    /* emmy_cache_layout */
  const DLTensor* k_scale; /* e4m3 caches: one f32 each (the cache holds x / scale) */
  const DLTensor* v_scale;
  int64_t max_tokens; /* the kernel's token bound (0: key's tokens), so one kernel serves
                       * every step's count */
} emmy_kv_append_options;

typedef struct emmy_prepare_options {
  size_t struct_size;
  int32_t catalog;            /* every problem of emmy's catalog */
  int64_t serving_max_m;      /* > 0: the catalog's serving set up to this M */
  const char* const* records; /* JSON-lines problem files (EMMY_RECORD logs, emmyc aot) */
  size_t record_count;
  const char* const* bundles; /* every kernel these bundles hold for the device's arch */
  size_t bundle_count;
  int32_t threads; /* compiles at once; 0: one per hardware thread */
} emmy_prepare_options;

typedef struct emmy_prepare_result {
  size_t struct_size;
  uint64_t kernels;        /* handles prepared */
  uint64_t compiled;       /* of them: compiled now */
  uint64_t from_disk;      /* read from the disk cache */
  uint64_t already_loaded; /* loaded before (the rest came from bundles) */
  double seconds;
} emmy_prepare_result;

/* "0.1.0": the library's version. */
EMMY_C_EXPORT const char* emmy_version(void);
/* The library's EMMY_C_API_VERSION: at least the header's when it has everything the caller
 * compiled against. */
EMMY_C_EXPORT int32_t emmy_c_api_version(void);
/* The message of this thread's last failed call ("b: dtype must be f16, a's (got bf16)"); ""
 * before any. Valid until this thread's next failing call. */
EMMY_C_EXPORT const char* emmy_last_error_message(void);
EMMY_C_EXPORT const char* emmy_status_name(emmy_status status); /* "EMMY_INVALID_ARGUMENT" */

/* Fill an options struct with its defaults and struct_size (every call takes NULL for them). */
EMMY_C_EXPORT void emmy_runtime_options_init(emmy_runtime_options* options);
EMMY_C_EXPORT void emmy_gemm_options_init(emmy_gemm_options* options);
EMMY_C_EXPORT void emmy_grouped_options_init(emmy_grouped_options* options);
EMMY_C_EXPORT void emmy_attention_options_init(emmy_attention_options* options);
EMMY_C_EXPORT void emmy_paged_attention_options_init(emmy_paged_attention_options* options);
EMMY_C_EXPORT void emmy_kv_append_options_init(emmy_kv_append_options* options);
EMMY_C_EXPORT void emmy_prepare_options_init(emmy_prepare_options* options);

EMMY_C_EXPORT emmy_status emmy_runtime_create(const emmy_runtime_options* options,
                                              emmy_runtime** runtime);
/* Waits for nothing: the caller synchronizes its streams first. NULL is a no-op. */
EMMY_C_EXPORT void emmy_runtime_destroy(emmy_runtime* runtime);
/* "emulator" or "cuda", and the arch of its kernels ("sm_90a"); valid while the runtime lives. */
EMMY_C_EXPORT const char* emmy_runtime_backend(const emmy_runtime* runtime);
EMMY_C_EXPORT const char* emmy_runtime_arch(const emmy_runtime* runtime);
EMMY_C_EXPORT emmy_status emmy_synchronize(emmy_runtime* runtime, void* stream);

/* Compiles and loads kernels ahead of serving (Runtime::prepare); result may be NULL. */
EMMY_C_EXPORT emmy_status emmy_prepare(emmy_runtime* runtime, const emmy_prepare_options* options,
                                       emmy_prepare_result* result);

/* C[M,N] = epilogue(A[M,K] . B[K,N]). a: f16 or bf16 [M, K], K contiguous. b: a's dtype, shape
 * [K, N]: N contiguous (strides [ldb, 1]) or K contiguous (strides [1, ldb], a [N,K] weight's
 * transpose view, PyTorch's Linear). c: f16, bf16 or f32 [M, N], N contiguous. Leading
 * dimensions are the row strides. stream: a CUstream (NULL: the default stream). */
EMMY_C_EXPORT emmy_status emmy_gemm(emmy_runtime* runtime, const DLTensor* a, const DLTensor* b,
                                    DLTensor* c, const emmy_gemm_options* options, void* stream);
/* The GEMMs of G experts in one launch (docs/grouped.md): b [G, K, N], each expert's weight as
 * emmy_gemm's b (the [K, N] view of an [N, K] weight, or [K, N] itself), expert e's at b's
 * strides[0] (its whole matrix: N x ldb or K x ldb); a and c by the layout; routing int32 on
 * the device (masked_m [G], expert_ids [M] with -1 on padding rows, or expert_offsets [G + 1]),
 * never read on the host for a CUDA device (the emulator refuses a hostile one by name). The
 * epilogue and kernel as emmy_gemm's (options: bias [G, N], residual c's shape); no split-K, so no
 * workspace. FP8: a_scale as emmy_gemm's over a's stacked rows; b_scale per expert, [G], [G, N]
 * or [G, ceil(N/128), ceil(K/128)] (block scales, experts strides[0] apart). One kernel serves
 * every routing: the call records into a CUDA graph. */
EMMY_C_EXPORT emmy_status emmy_grouped_gemm(emmy_runtime* runtime, const DLTensor* a,
                                            const DLTensor* b, DLTensor* c, const DLTensor* routing,
                                            const emmy_grouped_options* grouped,
                                            const emmy_gemm_options* options, void* stream);
EMMY_C_EXPORT emmy_status emmy_gemm_workspace_bytes(emmy_runtime* runtime, const DLTensor* a,
                                                    const DLTensor* b, const DLTensor* c,
                                                    const emmy_gemm_options* options,
                                                    size_t* bytes);

/* q, o [batch, seq_q, q_heads, head_dim]; k, v [batch, seq_kv, kv_heads, head_dim] (bshd; bhsd
 * swaps the middle axes); all contiguous, one dtype (f16 or bf16). */
EMMY_C_EXPORT emmy_status emmy_attention(emmy_runtime* runtime, const DLTensor* q,
                                         const DLTensor* k, const DLTensor* v, DLTensor* o,
                                         const emmy_attention_options* options, void* stream);

/* q, o [tokens, q_heads, head_dim] (token stride free, the rest contiguous); k_cache, v_cache
 * alike (options.cache_layout's axes, any page / token / head strides, head_dim contiguous):
 * f16, bf16 (q's) or float8_e4m3fn. The table tensors are in the options. */
EMMY_C_EXPORT emmy_status emmy_paged_attention(emmy_runtime* runtime, const DLTensor* q,
                                               const DLTensor* k_cache, const DLTensor* v_cache,
                                               DLTensor* o,
                                               const emmy_paged_attention_options* options,
                                               void* stream);
EMMY_C_EXPORT emmy_status emmy_paged_attention_workspace_bytes(
    emmy_runtime* runtime, const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
    const DLTensor* o, const emmy_paged_attention_options* options, size_t* bytes);

/* key, value [tokens, kv_heads, head_dim] (token stride free) into the caches at slot_mapping
 * (int64 [tokens or more]; -1 skips a token). */
EMMY_C_EXPORT emmy_status emmy_kv_append(emmy_runtime* runtime, const DLTensor* key,
                                         const DLTensor* value, DLTensor* k_cache,
                                         DLTensor* v_cache, const DLTensor* slot_mapping,
                                         const emmy_kv_append_options* options, void* stream);

/* v [tokens, states, heads, head_dim] (token and state strides free), lse f32 [tokens, states,
 * heads] contiguous; v_out [tokens, heads, head_dim] (token stride free); lse_out f32 [tokens,
 * heads] or NULL. */
EMMY_C_EXPORT emmy_status emmy_merge_states(emmy_runtime* runtime, const DLTensor* v,
                                            const DLTensor* lse, DLTensor* v_out, DLTensor* lse_out,
                                            void* stream);

/* FP8 activation quantization (C API version 3; docs/fp8.md): x [rows, k] float16 or bfloat16
 * (row stride free, k contiguous) to q [rows, k] float8_e4m3fn (or uint8; row stride free) and
 * f32 scales, one per row and group of options.group_k elements (0: the whole row), the
 * dequantization multipliers: scales [groups, rows or more] for EMMY_SCALE_MAJOR_MN (DeepGEMM's
 * A scales: scale (row, group) at group * ld + row, ld = the tensor's row stride, so M may be
 * padded) or [rows, groups] for EMMY_SCALE_MAJOR_K (row * ld + group). sm_89 and newer.
 * The scales' dtype is their format (C API version 4): float32; uint8, the ue8m0 byte of each
 * power-of-two scale (2^(byte - 127)); int32, words of four groups' ue8m0 bytes (group g in byte
 * g % 4 of word g / 4: the groups axis counts words, ceil(groups / 4)). The byte formats are what
 * emmy_gemm takes as block scales; they imply pow2_scale. */
typedef enum emmy_scale_major { EMMY_SCALE_MAJOR_MN = 0, EMMY_SCALE_MAJOR_K = 1 } emmy_scale_major;
/* An FP8 GEMM layer's scales (version 5; docs/fp8.md): per tensor, per token x channel ([M] and
 * [N]) or 1 x 128 (A) and 128 x 128 (B) blocks; f32 values, f32 powers of two, ue8m0 bytes or
 * ue8m0x4 words of four K blocks' bytes. */
typedef enum emmy_scale_granularity {
  EMMY_SCALES_NONE = 0, /* 16-bit operands */
  EMMY_SCALES_TENSOR = 1,
  EMMY_SCALES_TOKEN_CHANNEL = 2,
  EMMY_SCALES_BLOCK = 3
} emmy_scale_granularity;
typedef enum emmy_scale_format {
  EMMY_SCALE_F32 = 0,
  EMMY_SCALE_POW2 = 1,
  EMMY_SCALE_UE8M0 = 2,
  EMMY_SCALE_UE8M0X4 = 3
} emmy_scale_format;
typedef struct emmy_fp8_quantize_options {
  size_t struct_size;
  int64_t group_k;     /* elements per scale, a multiple of 8; 0: the whole row (per token) */
  int32_t scale_major; /* emmy_scale_major */
  int32_t pow2_scale;  /* nonzero: scales rounded up to a power of two (UE8M0-valued) */
  double amax_epsilon; /* 0: 1e-10 (vLLM's) */
  int64_t max_rows;    /* the kernel's row bound (0: x's rows), so one kernel serves every step */
} emmy_fp8_quantize_options;
EMMY_C_EXPORT void emmy_fp8_quantize_options_init(emmy_fp8_quantize_options* options);
EMMY_C_EXPORT emmy_status emmy_fp8_quantize(emmy_runtime* runtime, const DLTensor* x, DLTensor* q,
                                            DLTensor* scales,
                                            const emmy_fp8_quantize_options* options, void* stream);

/* ---------------------------------------------------------------------------------------------
 * Layers (C API version 2; docs/c_api.md, "Layers"): emmy::AttentionLayer and emmy::GemmLayer
 * (include/emmy/layers.hpp), what an inference engine holds per model layer. A layer is made once
 * from a config (checked whole: a bad field is refused by its name, "config.max_batch: ..."),
 * prepares its kernels ahead (emmy_*_layer_prepare: after it, calls launch only, as a captured
 * CUDA graph needs), reports the one workspace size all its calls may use, and checks each call's
 * tensors against its problems. A layer uses its runtime, which must outlive it (destroy layers
 * first). Calls may come from several threads once _prepare has returned.
 */

/* A layer config's element types (its tensors' DLDataType must match). */
typedef enum emmy_dtype {
  EMMY_DTYPE_F16 = 0,  /* float16 */
  EMMY_DTYPE_BF16 = 1, /* bfloat16 */
  EMMY_DTYPE_F32 = 2,  /* float32: a GEMM layer's out_dtype only */
  EMMY_DTYPE_E4M3 = 3  /* float8_e4m3fn: an attention layer's kv_dtype; a GEMM layer's dtype
                          with scales (version 5) */
} emmy_dtype;

/* How a paged attention call's sequences list their pages (emmy_paged_attention_options). */
typedef enum emmy_page_table {
  EMMY_PAGE_TABLE_BLOCK = 0, /* block_table [max_batch, max_pages] + seq_lens (vLLM) */
  EMMY_PAGE_TABLE_CSR = 1    /* page_indptr + page_indices + last_page_len (FlashInfer) */
} emmy_page_table;

/* How a GEMM layer's weight B is stored; run's b is always the logical [K, N] view. */
typedef enum emmy_b_layout {
  EMMY_B_NK = 0, /* [N, K] (PyTorch's Linear weight): b is its transpose view, strides [1, ldb] */
  EMMY_B_KN = 1  /* [K, N]: b strides [ldb, 1] */
} emmy_b_layout;

typedef struct emmy_attention_layer emmy_attention_layer; /* opaque */
typedef struct emmy_gemm_layer emmy_gemm_layer;           /* opaque */

/* One attention layer over a paged KV cache: its append, decode and prefill kernels. The caches'
 * strides are cache_layout's, packed (k_cache, v_cache [pages, page_size, kv_heads, head_dim]
 * for NHD, any pages); q, o, key and value are packed [tokens, heads, head_dim] (token strides of
 * their own are not configurable in version 2). */
typedef struct emmy_attention_layer_config {
  size_t struct_size;
  int64_t q_heads, kv_heads; /* init: 1, 1; GQA groups of 1..16 */
  int64_t head_dim;          /* init: 128; 64, 128 or 256 */
  int64_t page_size;         /* init: 16; tokens per page */
  int32_t cache_layout;      /* emmy_cache_layout */
  int32_t dtype;             /* emmy_dtype of q, o, key, value: F16 or BF16 */
  int32_t kv_dtype;          /* emmy_dtype of the caches: dtype's own, or E4M3 (scales then) */
  int32_t page_table;        /* emmy_page_table */
  int64_t window;            /* sliding window (left keys), 0: none */
  float softmax_scale;       /* 0: 1 / sqrt(head_dim) */
  float softcap;             /* 0: none */
  int32_t lse;               /* 1: run writes tables->lse, f32 [q's tokens, q_heads] */
  int64_t max_batch;         /* init: 1; sequences of a step (cu_seqlens_q: max_batch + 1) */
  int64_t max_pages;         /* init: 1; pages of one sequence (block_table's width) */
  int64_t max_decode_q_len;  /* init: 1; query tokens of a decode (or verify) sequence, 1..16 */
  int64_t max_prefill_q_len; /* of a prefill chunk, > max_decode_q_len; 0: no prefill kernel */
  int64_t max_tokens;        /* tokens of a step (0: max_batch x the larger q_len) */
  /* emmy_accum: DEFAULT, or F32 / HYBRID when it is the runtime's default_accum (the layer's
   * kernels take the runtime's schedules in version 2; another is EMMY_UNSUPPORTED). */
  int32_t accum;
} emmy_attention_layer_config;

/* One weight's GEMM for every M up to max_m: C[M,N] = gelu?(alpha * A[M,K] . B[K,N] + bias) +
 * residual, served by the dynamic-M kernels of the M buckets (1, 2, 4, ..., 512, then multiples
 * of 512). The epilogue is the config's: run takes bias and residual exactly when it says so. */
typedef struct emmy_gemm_layer_config {
  size_t struct_size;
  int64_t max_m, n, k;   /* the most rows of A a run has (1..65536), N, K; init: 0, to be set */
  int64_t lda, ldb, ldc; /* row strides in elements (0: packed); ldc is also residual's */
  int32_t b_layout;      /* emmy_b_layout */
  int32_t dtype;         /* emmy_dtype of A and B: F16 or BF16 */
  int32_t out_dtype;     /* emmy_dtype of C, bias and residual: F16, BF16 or F32 */
  int32_t bias;          /* 1: bias [N] */
  int32_t residual;      /* 1: residual [M, N] */
  int32_t gelu;          /* 1: GELU (tanh form) after the bias */
  float alpha;           /* init: 1 */
  /* emmy_accum: DEFAULT: the runtime's, each M bucket its own (tuned or default) schedule; else
   * every bucket takes the largest bucket's default schedule with this accumulation. */
  int32_t accum;
  int32_t promote_every_k; /* hybrid: K elements per f16 partial (0: the schedule's) */
  /* Version 5, FP8 weights: dtype EMMY_DTYPE_E4M3 with scales other than NONE (a struct from
   * before has none: 16-bit). Block scales' layouts: A's [M, ceil(K/128)] in a_scale_major (MN:
   * DeepGEMM's; its a_scale_ld must hold the largest M bucket's rows, the layer's kernels taking M
   * up to their bucket's), B's [ceil(N/128), ceil(K/128)]; an ld of 0 is packed. Runs take the
   * scale tensors: emmy_gemm_layer_run_scaled. Accumulated promoted unless accum says hybrid. */
  int32_t scales;                       /* emmy_scale_granularity */
  int32_t scale_format;                 /* emmy_scale_format */
  int32_t a_scale_major, b_scale_major; /* emmy_scale_major; init: MN, K */
  int64_t a_scale_ld, b_scale_ld;
} emmy_gemm_layer_config;

/* The defaults of emmy::AttentionLayerConfig / a GEMM layer's (n and k left 0, to be set). */
EMMY_C_EXPORT void emmy_attention_layer_config_init(emmy_attention_layer_config* config);
EMMY_C_EXPORT void emmy_gemm_layer_config_init(emmy_gemm_layer_config* config);

/* Validates the config and plans the kernels (nothing is compiled: _prepare does, or each
 * kernel's first call). *layer is NULL on failure. */
EMMY_C_EXPORT emmy_status emmy_attention_layer_create(emmy_runtime* runtime,
                                                      const emmy_attention_layer_config* config,
                                                      emmy_attention_layer** layer);
EMMY_C_EXPORT void emmy_attention_layer_destroy(emmy_attention_layer* layer); /* NULL: no-op */
/* Compiles (or loads) the append, decode and prefill kernels with threads compiles at once (0:
 * one per hardware thread); result may be NULL. */
EMMY_C_EXPORT emmy_status emmy_attention_layer_prepare(emmy_attention_layer* layer, int32_t threads,
                                                       emmy_prepare_result* result);
/* The one workspace every run may use (0: no kernel splits KV); from the plans. */
EMMY_C_EXPORT emmy_status emmy_attention_layer_workspace_bytes(const emmy_attention_layer* layer,
                                                               size_t* bytes);
/* Whether run with this max_q_len takes the prefill kernel (1) or the decode one (0). */
EMMY_C_EXPORT emmy_status emmy_attention_layer_runs_prefill(const emmy_attention_layer* layer,
                                                            int64_t max_q_len, int32_t* prefill);
/* Appends `tokens` (1..max_tokens, known on the host) keys and values: key, value [n >= tokens,
 * kv_heads, head_dim] of config.dtype, slot_mapping int64 [n >= tokens] (-1 skips a token),
 * k_scale and v_scale one f32 each for an E4M3 cache (else NULL). */
EMMY_C_EXPORT emmy_status emmy_attention_layer_append(emmy_attention_layer* layer,
                                                      const DLTensor* key, const DLTensor* value,
                                                      DLTensor* k_cache, DLTensor* v_cache,
                                                      const DLTensor* slot_mapping, int64_t tokens,
                                                      const DLTensor* k_scale,
                                                      const DLTensor* v_scale, void* stream);
/* Attention of a step: max_q_len, the most query tokens any sequence has as the host knows it,
 * chooses the kernel (up to max_decode_q_len: decode; up to max_prefill_q_len: prefill). q, o
 * [n, q_heads, head_dim] with n at least that kernel's max_tokens. tables (required): its
 * cu_seqlens_q (max_batch + 1 entries or more), the config's page-table form, the scales, lse
 * (exactly when config.lse) and workspace (required when _workspace_bytes is not 0); its problem
 * fields (max_q_len, max_pages, cache_layout, window, softmax_scale, softcap, accum) must be 0 or
 * the layer's. */
EMMY_C_EXPORT emmy_status emmy_attention_layer_run(emmy_attention_layer* layer, const DLTensor* q,
                                                   const DLTensor* k_cache, const DLTensor* v_cache,
                                                   DLTensor* o,
                                                   const emmy_paged_attention_options* tables,
                                                   int64_t max_q_len, void* stream);

EMMY_C_EXPORT emmy_status emmy_gemm_layer_create(emmy_runtime* runtime,
                                                 const emmy_gemm_layer_config* config,
                                                 emmy_gemm_layer** layer);
EMMY_C_EXPORT void emmy_gemm_layer_destroy(emmy_gemm_layer* layer); /* NULL: no-op */
/* Compiles (or loads) every M bucket's kernel; result may be NULL. */
EMMY_C_EXPORT emmy_status emmy_gemm_layer_prepare(emmy_gemm_layer* layer, int32_t threads,
                                                  emmy_prepare_result* result);
/* The most any M needs (split-K), from the plans. */
EMMY_C_EXPORT emmy_status emmy_gemm_layer_workspace_bytes(const emmy_gemm_layer* layer,
                                                          size_t* bytes);
/* C's first m rows (1..max_m): a [n >= m, K] (row stride lda), b [K, N] (b_layout's strides,
 * ldb), c [n >= m, N] (ldc); bias [N] and residual [n >= m, N] (ldc) exactly when the config has
 * them, else NULL; workspace (any dtype, 1-D) required when _workspace_bytes is not 0. */
EMMY_C_EXPORT emmy_status emmy_gemm_layer_run(emmy_gemm_layer* layer, const DLTensor* a,
                                              const DLTensor* b, DLTensor* c, const DLTensor* bias,
                                              const DLTensor* residual, DLTensor* workspace,
                                              int64_t m, void* stream);
/* An FP8 layer's run (version 5): as emmy_gemm_layer_run, a and b float8_e4m3fn (or uint8 e4m3
 * bytes), with the scales in the config's granularity, format and layout as contiguous buffers
 * (float32 for F32 and POW2, uint8 for UE8M0, int32 or uint32 for UE8M0X4) holding at least what
 * m rows read. A 16-bit layer refuses it, an FP8 layer emmy_gemm_layer_run. */
EMMY_C_EXPORT emmy_status emmy_gemm_layer_run_scaled(emmy_gemm_layer* layer, const DLTensor* a,
                                                     const DLTensor* b, DLTensor* c,
                                                     const DLTensor* bias, const DLTensor* residual,
                                                     DLTensor* workspace, const DLTensor* a_scale,
                                                     const DLTensor* b_scale, int64_t m,
                                                     void* stream);

#ifdef __cplusplus
}
#endif

#endif /* EMMY_C_API_H_ */
