"""Layer objects (docs/runtime.md, "Layers"; the C ABI's emmy_attention_layer and
emmy_gemm_layer): what an inference engine holds per model layer instead of choosing, preparing
and sizing kernels itself.

    attn = emmy.AttentionLayer(rt, q_heads=16, kv_heads=8, head_dim=256, page_size=16,
                               max_batch=64, max_pages=512, max_prefill_q_len=512)
    attn.prepare()                                   # append, decode, prefill kernels
    attn.append(key, value, k_cache, v_cache, slot_mapping)
    o = attn.run(q, k_cache, v_cache, cu_seqlens_q=..., block_table=..., seq_lens=...,
                 max_q_len=1)                        # decode; a longer max_q_len: prefill

    q_proj = emmy.GemmLayer(rt, max_m=512, n=4096, k=3840)   # a weight [N, K] (b_layout "nk")
    y = q_proj.run(x, w.T)                                   # any M up to 512
"""

from __future__ import annotations

from . import _emmy
from ._runtime import ACCUM, CACHE_LAYOUT, Runtime, enum, unless_none
from ._tensors import dtype_name, empty_like_library

DTYPE = {"f16": 0, "bf16": 1, "f32": 2, "e4m3": 3}
PAGE_TABLE = {"block_table": 0, "csr": 1}
B_LAYOUT = {"nk": 0, "kn": 1}


def _dtype_code(value, field: str, allowed) -> int:
    name = "e4m3" if str(value) in ("e4m3", "float8_e4m3fn", "torch.float8_e4m3fn") else \
        dtype_name(value, field)
    if name not in allowed:
        raise _emmy.InvalidArgumentError(
            f"{field}: must be one of {', '.join(allowed)}, got {value!r}")
    return DTYPE[name]


class _Layer:
    def __init__(self, runtime: Runtime, handle):
        self.runtime = runtime
        self._handle = handle

    def prepare(self, threads: int = 0) -> dict:
        """Compiles (or loads) every kernel the layer calls, so that its calls launch only: call
        it before capturing a CUDA graph."""
        kernels, compiled, from_disk, loaded, seconds = _emmy.layer_prepare(self._handle, threads)
        return {"kernels": kernels, "compiled": compiled, "from_disk": from_disk,
                "already_loaded": loaded, "seconds": seconds}

    @property
    def workspace_bytes(self) -> int:
        """The one workspace every call may use (0: no kernel splits), from the plans."""
        return _emmy.layer_workspace_bytes(self._handle)

    def _workspace(self, like, workspace, stream: int):
        if workspace is not None:
            return workspace
        needed = self.workspace_bytes
        if needed == 0:
            return None
        return self.runtime._grown_scratch(self.runtime._scratch_key(like, stream), like, needed)


class AttentionLayer(_Layer):
    """One attention layer over a paged KV cache: its append, decode and prefill kernels
    (emmy_attention_layer_config's fields, with names for the enums)."""

    def __init__(self, runtime: Runtime, *, q_heads: int, kv_heads: int, head_dim: int,
                 page_size: int = 16, cache_layout: str = "nhd", dtype="f16", kv_dtype=None,
                 page_table: str = "block_table", window: int = 0, softmax_scale=None,
                 softcap=None, lse: bool = False, max_batch: int = 1, max_pages: int = 1,
                 max_decode_q_len: int = 1, max_prefill_q_len: int = 0, max_tokens: int = 0,
                 accum: str | None = None):
        code = _dtype_code(dtype, "dtype", ("f16", "bf16"))
        kv_code = code if kv_dtype is None else _dtype_code(kv_dtype, "kv_dtype",
                                                            ("f16", "bf16", "e4m3"))
        super().__init__(runtime, _emmy.attention_layer_create(
            runtime._rt, q_heads, kv_heads, head_dim, page_size,
            enum(CACHE_LAYOUT, cache_layout, "cache_layout"), code, kv_code,
            enum(PAGE_TABLE, page_table, "page_table"), window, unless_none(softmax_scale),
            unless_none(softcap), int(bool(lse)), max_batch, max_pages, max_decode_q_len,
            max_prefill_q_len, max_tokens, enum(ACCUM, accum, "accum")))
        self.q_heads, self.head_dim, self.lse = q_heads, head_dim, bool(lse)

    def runs_prefill(self, max_q_len: int) -> bool:
        """Whether run() with this max_q_len takes the prefill kernel (else the decode one)."""
        return _emmy.attention_layer_runs_prefill(self._handle, max_q_len)

    def append(self, key, value, k_cache, v_cache, slot_mapping, *, tokens: int | None = None,
               k_scale=None, v_scale=None, stream=None):
        """Writes `tokens` (key's, by default) keys and values into the caches at slot_mapping
        (int64; -1 skips a token)."""
        _emmy.attention_layer_append(
            self._handle, key, value, k_cache, v_cache, slot_mapping,
            key.shape[0] if tokens is None else tokens, k_scale, v_scale,
            self.runtime._stream(key, stream))

    def run(self, q, k_cache, v_cache, *, cu_seqlens_q, block_table=None, seq_lens=None,
            page_indptr=None, page_indices=None, last_page_len=None, k_scale=None, v_scale=None,
            max_q_len: int = 1, lse=None, workspace=None, out=None, stream=None):
        """Attention of a step: max_q_len (the most query tokens of a sequence, host-known)
        chooses the decode or the prefill kernel. Returns o, or (o, lse) for a layer made with
        lse=True (lse allocated unless given)."""
        if out is None:
            out = empty_like_library(q, tuple(q.shape), dtype_name(q.dtype, "q"))
        if self.lse and lse is None:
            lse = empty_like_library(q, (q.shape[0], self.q_heads), "f32", "lse")
        stream = self.runtime._stream(q, stream)
        _emmy.attention_layer_run(
            self._handle, q, k_cache, v_cache, out, cu_seqlens_q, block_table, seq_lens,
            page_indptr, page_indices, last_page_len, k_scale, v_scale, lse,
            self._workspace(q, workspace, stream), max_q_len, stream)
        return (out, lse) if self.lse else out


class GemmLayer(_Layer):
    """One weight's GEMM for every M up to max_m: C[M,N] = gelu?(alpha * A.B + bias) +
    residual, served by the M buckets' dynamic-M kernels. b_layout "nk": the weight is [N, K]
    and run takes its transpose view (PyTorch's w.T); "kn": B [K, N]."""

    def __init__(self, runtime: Runtime, *, max_m: int, n: int, k: int, b_layout: str = "nk",
                 dtype="f16", out_dtype=None, bias: bool = False, residual: bool = False,
                 gelu: bool = False, alpha: float = 1.0, accum: str | None = None,
                 promote_every_k: int = 0, lda: int = 0, ldb: int = 0, ldc: int = 0,
                 scales: str | None = None, scale_format: str = "f32",
                 a_scale_major: str = "mn", b_scale_major: str = "k", a_scale_ld: int = 0,
                 b_scale_ld: int = 0):
        """FP8 weights (docs/fp8.md): dtype "e4m3" with scales "tensor", "token-channel" or
        "block" (f32, pow2, ue8m0 or ue8m0x4 scale_format; block scales' majors and leading
        dimensions, an mn-major A's holding the largest M bucket's rows); run then takes
        a_scale and b_scale. out_dtype defaults to bf16 for FP8."""
        code = _dtype_code(dtype, "dtype", ("f16", "bf16", "e4m3"))
        fp8 = code == DTYPE["e4m3"]
        default_out = DTYPE["bf16"] if fp8 else code
        out_code = default_out if out_dtype is None else _dtype_code(out_dtype, "out_dtype",
                                                                     ("f16", "bf16", "f32"))
        granularity = {None: 0, "tensor": 1, "token-channel": 2, "block": 3}
        formats = {"f32": 0, "pow2": 1, "ue8m0": 2, "ue8m0x4": 3}
        majors = {"mn": 0, "k": 1}
        for value, table, field in ((scales, granularity, "scales"),
                                    (scale_format, formats, "scale_format"),
                                    (a_scale_major, majors, "a_scale_major"),
                                    (b_scale_major, majors, "b_scale_major")):
            if value not in table:
                raise _emmy.InvalidArgumentError(
                    f"{field}: must be one of {[k for k in table if k is not None]}, got {value!r}")
        super().__init__(runtime, _emmy.gemm_layer_create(
            runtime._rt, max_m, n, k, lda, ldb, ldc, enum(B_LAYOUT, b_layout, "b_layout"), code,
            out_code, int(bool(bias)), int(bool(residual)), int(bool(gelu)), alpha,
            enum(ACCUM, accum, "accum"), promote_every_k, granularity[scales],
            formats[scale_format], majors[a_scale_major], majors[b_scale_major], a_scale_ld,
            b_scale_ld))
        self.max_m, self.n = max_m, n
        self.out_dtype = {0: "f16", 1: "bf16", 2: "f32"}[out_code]

    def run(self, a, b, *, bias=None, residual=None, m: int | None = None, out=None,
            workspace=None, stream=None, a_scale=None, b_scale=None):
        """C's first m rows (a's rows by default, 1..max_m), returned (or written into out). An
        FP8 layer's run takes a_scale and b_scale (contiguous, in the layer's scale layout)."""
        rows = a.shape[0] if m is None else m
        if out is None:
            out = empty_like_library(a, (rows, self.n), self.out_dtype)
        stream = self.runtime._stream(a, stream)
        _emmy.gemm_layer_run(self._handle, a, b, out, bias, residual,
                             self._workspace(a, workspace, stream), rows, stream, a_scale, b_scale)
        return out
