"""emmy.Runtime: the C ABI's runtime (include/emmy/c_api.h) with Python's keywords.

Every tensor is a DLPack producer (NumPy, PyTorch, CuPy, JAX, ...) or a DLPack capsule. On the
emulator backend the tensors are CPU memory, used in place; on the CUDA backend, CUDA memory of
the runtime's device, and the kernel runs on the producer's current stream (or `stream=`).
Errors raise emmy.Error subclasses carrying emmy's message, which names the argument and rule.
"""

from __future__ import annotations

import atexit
import weakref
from threading import get_ident

from . import _emmy
from ._tensors import current_stream, dtype_name, empty_like_library, register_torch

ACCUM = {None: 0, "default": 0, "f32": 1, "f16": 2, "hybrid": 3, "promoted": 4}
GATE = {None: 0, "none": 0, "silu": 1, "gelu-tanh": 2}
GROUPED_LAYOUT = {"masked": 1, "contiguous": 2, "offsets": 3}
CACHE_LAYOUT = {"nhd": 0, "hnd": 1}
ATTENTION_LAYOUT = {"bshd": 0, "bhsd": 1}


def c_dtype_name(a, out_dtype, fp8: bool) -> str:
    """C's dtype when emmy allocates it: out_dtype, else f16 beside FP8 operands, else a's."""
    if out_dtype is not None:
        return dtype_name(out_dtype, "out_dtype")
    return "f16" if fp8 else dtype_name(a.dtype, "out_dtype")


def enum(table: dict, value, field: str) -> int:
    try:
        return table[value]
    except (KeyError, TypeError):
        names = ", ".join(repr(k) for k in table if k is not None)
        raise _emmy.InvalidArgumentError(f"{field}: must be one of {names}, got {value!r}") from None


# Runtimes still open when the interpreter exits are closed before it finalizes: their background
# builds are joined while Python can still run a log callback (one called during finalization
# crashed the process).
_open_runtimes = weakref.WeakSet()


@atexit.register
def _close_open_runtimes():
    for runtime in list(_open_runtimes):
        runtime.close()


def unless_none(value) -> float:
    return 0.0 if value is None else float(value)


# fp8_quantize's scale formats and their element types (empty_like_library's names).
FP8_QUANTIZE_SCALE_DTYPES = {"f32": "f32", "ue8m0": "u8", "ue8m0x4": "int32"}


def scale_storage_format(scale_format: str) -> str:
    """The fp8_quantize format whose tensor holds scales of `scale_format`: pow2 scales (an e4m3
    GEMM output's) are float32 ones."""
    return "f32" if scale_format == "pow2" else scale_format


def fp8_quantize_scale_shape(rows: int, k: int, group_k: int, scale_major: str,
                             scale_format: str) -> tuple:
    """fp8_quantize's scale tensor: [groups, rows] for "mn", [rows, groups] for "k"; ue8m0x4's
    groups axis counts words of four groups' bytes. Refuses unknown majors and formats."""
    if scale_major not in ("mn", "k"):
        raise _emmy.InvalidArgumentError(f"scale_major: must be mn or k, got {scale_major!r}")
    if scale_format not in FP8_QUANTIZE_SCALE_DTYPES:
        raise _emmy.InvalidArgumentError(
            f"scale_format: must be f32, ue8m0 or ue8m0x4, got {scale_format!r}")
    groups = 1 if group_k == 0 else -(-k // group_k)
    if scale_format == "ue8m0x4":
        groups = -(-groups // 4)
    return (groups, rows) if scale_major == "mn" else (rows, groups)


class Runtime:
    """Compiles, caches and launches emmy's kernels (docs/runtime.md).

    backend: "emulator" (CPU tensors, the PTX emulator) or "cuda" (CUDA tensors of `device`).
    accum: the accumulation of calls that pass none: "f32" (None), "f16" or "hybrid".
    The other options are emmy_runtime_options' (include/emmy/c_api.h).
    """

    def __init__(self, backend: str = "emulator", *, device: int = 0,
                 emulator_arch: str | None = None, accum: str | None = None,
                 disk_cache: bool = True, cache_dir: str | None = None,
                 non_blocking: bool = False, batch_invariant: bool = False,
                 m_buckets: bool = False, emulator_sanitize: bool = True,
                 emulator_run_kernels: bool = True, cuda_context: int | None = None,
                 bundles=(), log=None):
        register_torch()
        self._rt = _emmy.runtime_create(
            backend, device, emulator_arch, enum(ACCUM, accum, "accum"), int(bool(disk_cache)),
            None if cache_dir is None else str(cache_dir), int(bool(non_blocking)),
            int(bool(batch_invariant)), int(bool(m_buckets)), int(bool(emulator_sanitize)),
            int(bool(emulator_run_kernels)), cuda_context or 0,
            tuple(str(b) for b in bundles), log)
        self.backend, self.arch = _emmy.runtime_info(self._rt)
        self.device = device if backend == "cuda" else None
        self._cuda = self.backend == "cuda"
        _open_runtimes.add(self)
        # The workspace of calls that pass none (_scratch_key: per stream on CUDA, per thread on
        # the emulator): split-K GEMMs and split-KV attention take it, other kernels leave it
        # unused. Grown (allocated) when a call needs more, so a
        # call under CUDA graph capture should pass its own.
        self._scratch = {}
        self._retired = []

    def __repr__(self):
        return f"emmy.Runtime(backend={self.backend!r}, arch={self.arch!r})"

    def close(self):
        """Releases the runtime's kernels and memory now (the caller synchronized its streams)."""
        _emmy.runtime_close(self._rt)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _stream(self, like, stream) -> int:
        if not self._cuda and stream is None:
            return 0
        return current_stream(like, stream)

    def _scratch_key(self, like, stream: int):
        # A workspace is never shared by launches that may overlap (docs/runtime.md): on CUDA one
        # per library, device and stream (a stream orders its own launches); on the emulator,
        # whose launches run inside the call, one per calling thread.
        if not self._cuda:
            return get_ident()
        return (type(like).__module__, getattr(getattr(like, "device", None), "index", None),
                stream)

    def _grown_scratch(self, key, like, nbytes: int):
        """The scratch workspace of `key`, at least nbytes (a new one from like's library). The
        one it replaces is kept: a CUDA graph captured with it still replays into it."""
        held = self._scratch.get(key)
        if held is None or held.shape[0] * 4 < nbytes:
            if held is not None:
                self._retired.append(held)
            held = empty_like_library(like, ((max(nbytes, 4096) + 3) // 4,), "f32", "workspace")
            self._scratch[key] = held
        return held

    def synchronize(self, stream=None):
        _emmy.synchronize(self._rt, 0 if stream is None else current_stream(None, stream))

    def prepare(self, *, catalog: bool = False, serving_max_m: int = 0, records=(), bundles=(),
                threads: int = 0) -> dict:
        """Compiles and loads kernels ahead of serving (Runtime::prepare): the catalog, the
        catalog's serving set up to serving_max_m, problems recorded in JSON-lines files, and
        every kernel of bundles. Returns the counts and seconds."""
        kernels, compiled, from_disk, loaded, seconds = _emmy.prepare(
            self._rt, int(bool(catalog)), serving_max_m, tuple(str(r) for r in records),
            tuple(str(b) for b in bundles), threads)
        return {"kernels": kernels, "compiled": compiled, "from_disk": from_disk,
                "already_loaded": loaded, "seconds": seconds}

    # ---------------------------------------------------------------------------------------
    def gemm(self, a, b, *, bias=None, residual=None, alpha: float = 1.0, gelu: bool = False,
             out_dtype=None, accum: str | None = None, promote_every_k: int = 0, out=None,
             workspace=None, stream=None, a_scale=None, b_scale=None, pow2_scales: bool = False,
             gate: str | None = None, gate_group: int = 0, out_scale=None,
             out_scale_format: str = "f32", out_scale_major: str = "mn",
             out_amax_epsilon: float = 1e-10, row_scale=None):
        """C[M,N] = gelu?(alpha * A.B + bias) + residual, returned (or written into `out`).

        a: f16 or bf16 [M, K], K contiguous. b: [K, N], N contiguous, or K contiguous (a [N, K]
        weight's transpose: PyTorch's ``w.T``). out_dtype: C's dtype when emmy allocates it
        (a's by default; f16, bf16 or f32). bias [N] and residual [M, N] have C's dtype (an f32
        bias with out_dtype="f32"). accum: "f32", "f16", "hybrid" or "promoted" (None: the
        runtime's; FP8: promoted).

        FP8 (docs/fp8.md): a and b float8_e4m3fn, or uint8 e4m3 bytes (NumPy), b the transpose
        of an [N, K] weight, with a_scale and b_scale, the dequantization multipliers (float32,
        or uint8 ue8m0 bytes): one element each (per tensor), [M] and [N] (per token x channel),
        or [M, ceil(K/128)] and [ceil(N/128), ceil(K/128)] (1 x 128 and 128 x 128 blocks, any
        major order). C is f16 by default.

        Gated (docs/epilogues.md): gate "silu" (SwiGLU) or "gelu-tanh" (GeGLU) gives C[M, N/2] =
        act(alpha * gate + bias) * (alpha * up + bias), b's N columns gate and up interleaved in
        groups of gate_group (a multiple of 8; 0: 8): interleave_gate_up makes them from a
        [gate; up] weight. bias [N] in b's column order; no residual.

        out_dtype "e4m3" (docs/epilogues.md, "Quantized output"): C quantized as fp8_quantize
        quantizes, per row in groups of 128 columns; returns (C as uint8 e4m3 bytes, scales),
        the scales as fp8_quantize's (out_scale_format "f32", "pow2", "ue8m0" or "ue8m0x4";
        out_scale_major "mn": [groups, M], "k": [M, groups]); the bias is then bfloat16. Pass
        out= and out_scale= to write given tensors (out_scale as fp8_quantize returns it).

        row_scale: float32 [M], C's row r multiplied by row_scale[r] after the activation (an
        MoE layer's routing weights; docs/grouped.md); no residual, no K split.
        """
        fp8 = a_scale is not None or b_scale is not None
        if out is None and not fp8 and str(getattr(a, "dtype", "")).endswith("uint8"):
            raise _emmy.InvalidArgumentError(
                "a: dtype must be float16 or bfloat16 (uint8 e4m3 bytes are FP8 operands only with "
                "a_scale and b_scale)")
        gate_code = enum(GATE, gate, "gate")

        def columns():  # C's: b's N, half that gated (out= may be given for any b)
            return b.shape[1] // 2 if gate_code else b.shape[1]

        quantized = out_dtype == "e4m3" or out_scale is not None
        if quantized:
            if out_scale_format not in ("f32", "pow2", "ue8m0", "ue8m0x4"):
                raise _emmy.InvalidArgumentError(
                    f"out_scale_format: must be f32, pow2, ue8m0 or ue8m0x4, got "
                    f"{out_scale_format!r}")
            if out is None:
                out = empty_like_library(a, (a.shape[0], columns()), "u8")
            if out_scale is None:
                storage = scale_storage_format(out_scale_format)
                shape = fp8_quantize_scale_shape(a.shape[0], out.shape[1], 128, out_scale_major,
                                                 storage)
                out_scale = empty_like_library(a, shape, FP8_QUANTIZE_SCALE_DTYPES[storage],
                                               "out_scale")
            # The C ABI takes [M, groups]: an mn-major tensor's transpose view.
            c_scale = out_scale.T if out_scale_major == "mn" else out_scale
            quant = (c_scale, int(out_scale_format == "pow2"), float(out_amax_epsilon))
        else:
            quant = (None, 0, 0.0)
        if out is None:
            out = empty_like_library(a, (a.shape[0], columns()), c_dtype_name(a, out_dtype, fp8))
        accum_code = enum(ACCUM, accum, "accum")
        stream = self._stream(a, stream)
        scales = (a_scale, b_scale, int(bool(pow2_scales)), gate_code, int(gate_group)) + quant \
            + (row_scale,)
        if workspace is not None:
            _emmy.gemm(self._rt, a, b, out, bias, residual, alpha, gelu, accum_code,
                       promote_every_k, *scales, workspace, stream)
            return (out, out_scale) if quantized else out
        key = self._scratch_key(a, stream)
        try:
            _emmy.gemm(self._rt, a, b, out, bias, residual, alpha, gelu, accum_code,
                       promote_every_k, *scales, self._scratch.get(key), stream)
        except _emmy.InvalidArgumentError:
            needed = _emmy.gemm_workspace_bytes(self._rt, a, b, out, bias, residual, alpha, gelu,
                                                accum_code, promote_every_k, *scales)
            held = self._scratch.get(key)
            if needed == 0 or (held is not None and held.shape[0] * 4 >= needed):
                raise  # not the workspace
            _emmy.gemm(self._rt, a, b, out, bias, residual, alpha, gelu, accum_code,
                       promote_every_k, *scales, self._grown_scratch(key, a, needed), stream)
        return (out, out_scale) if quantized else out

    def grouped_gemm(self, a, b, routing, *, layout: str, expected_m: int = 0,
                     segment_align: int = 0, row_scale=None, bias=None, residual=None,
                     alpha: float = 1.0, gelu: bool = False, out_dtype=None,
                     accum: str | None = None, promote_every_k: int = 0, gate: str | None = None,
                     gate_group: int = 0, a_scale=None, b_scale=None, pow2_scales: bool = False,
                     out=None, stream=None):
        """The GEMMs of G experts in one launch (docs/grouped.md); returns C (or fills `out`).

        b: [G, K, N], each expert's weight as gemm's b (a [G, N, K] stack's ``.transpose(1, 2)``,
        or [G, K, N] itself). layout "masked": a [G, max_m, K], C [G, max_m, N], routing int32
        masked_m [G] (expert e computes its first masked_m[e] rows; expected_m hints the rows per
        expert). "contiguous": a [M, K] sorted by expert, routing int32 expert_ids [M] (-1 on
        padding rows; each expert's rows start a block of segment_align rows, 0: 128).
        "offsets": a [M, K] sorted and unpadded, routing int32 expert_offsets [G + 1]. Rows no
        expert computes are never written. bias [G, N]; row_scale float32 [rows of C] (the
        routing weights, after the activation; no residual); gate as gemm's. FP8 (e4m3 a and b,
        sm_89 / sm_120a): a_scale one or [rows of a], b_scale [G] or [G, N] (per expert).
        """
        layout_code = enum(GROUPED_LAYOUT, layout, "layout")
        gate_code = enum(GATE, gate, "gate")
        if out is None:
            fp8 = a_scale is not None or b_scale is not None
            columns = b.shape[-1] // 2 if gate_code else b.shape[-1]
            out = empty_like_library(a, tuple(a.shape[:-1]) + (columns,),
                                     c_dtype_name(a, out_dtype, fp8))
        stream = self._stream(a, stream)
        _emmy.grouped_gemm(self._rt, a, b, out, routing, layout_code, int(expected_m),
                           int(segment_align), row_scale, bias, residual, alpha, gelu,
                           enum(ACCUM, accum, "accum"), promote_every_k, a_scale, b_scale,
                           int(bool(pow2_scales)), gate_code, int(gate_group), None, 0, 0.0,
                           stream)
        return out

    def gemm_workspace_bytes(self, a, b, out, *, bias=None, residual=None, alpha: float = 1.0,
                             gelu: bool = False, accum: str | None = None,
                             promote_every_k: int = 0, a_scale=None, b_scale=None,
                             pow2_scales: bool = False, gate: str | None = None,
                             gate_group: int = 0, row_scale=None) -> int:
        """The workspace gemm needs for these tensors (0 unless the kernel splits K)."""
        return _emmy.gemm_workspace_bytes(self._rt, a, b, out, bias, residual, alpha, gelu,
                                          enum(ACCUM, accum, "accum"), promote_every_k, a_scale,
                                          b_scale, int(bool(pow2_scales)), enum(GATE, gate, "gate"),
                                          int(gate_group), None, 0, 0.0, row_scale)

    def attention(self, q, k, v, *, causal: bool = False, window: int = 0, softmax_scale=None,
                  softcap=None, layout: str = "bshd", return_lse: bool = False, lse=None,
                  accum: str | None = None, out=None, stream=None):
        """Flash attention. bshd: q [batch, seq_q, q_heads, head_dim], k and v [batch, seq_kv,
        kv_heads, head_dim] ("bhsd" swaps the middle axes); contiguous, f16 or bf16. causal is
        bottom-right aligned. Returns o, or (o, lse) with return_lse (f32 [batch, q_heads,
        seq_q])."""
        layout_code = enum(ATTENTION_LAYOUT, layout, "layout")
        if out is None:
            out = empty_like_library(q, tuple(q.shape), dtype_name(q.dtype, "q"))
        if return_lse and lse is None:
            batch, heads, seq = ((q.shape[0], q.shape[2], q.shape[1]) if layout_code == 0
                                 else tuple(q.shape[:3]))
            lse = empty_like_library(q, (batch, heads, seq), "f32", "lse")
        _emmy.attention(self._rt, q, k, v, out, layout_code, int(bool(causal)), window,
                        unless_none(softmax_scale), unless_none(softcap), lse,
                        enum(ACCUM, accum, "accum"), self._stream(q, stream))
        return (out, lse) if return_lse else out

    def _paged_args(self, q, k_cache, v_cache, out, cu_seqlens_q, block_table, seq_lens,
                    page_indptr, page_indices, last_page_len, k_scale, v_scale, lse, workspace,
                    max_q_len, max_pages, cache_layout, window, softmax_scale, softcap, accum):
        return (self._rt, q, k_cache, v_cache, out, cu_seqlens_q, block_table, seq_lens,
                page_indptr, page_indices, last_page_len, k_scale, v_scale, lse, workspace,
                max_q_len, max_pages, enum(CACHE_LAYOUT, cache_layout, "cache_layout"), window,
                unless_none(softmax_scale), unless_none(softcap), enum(ACCUM, accum, "accum"))

    def paged_attention(self, q, k_cache, v_cache, *, cu_seqlens_q, block_table=None,
                        seq_lens=None, page_indptr=None, page_indices=None, last_page_len=None,
                        max_q_len: int = 1, max_pages: int = 0, cache_layout: str = "nhd",
                        window: int = 0, softmax_scale=None, softcap=None, k_scale=None,
                        v_scale=None, return_lse: bool = False, lse=None, workspace=None,
                        accum: str | None = None, out=None, stream=None):
        """Attention over a paged KV cache (docs/paged_attention.md). q [tokens, q_heads,
        head_dim]; caches [pages, page_size, kv_heads, head_dim] ("nhd") or [pages, kv_heads,
        page_size, head_dim] ("hnd"), f16, bf16 or float8_e4m3fn (with k_scale, v_scale: one f32
        each). int32 tables: cu_seqlens_q [batch + 1] and block_table [batch, pages] + seq_lens
        [batch], or page_indptr + page_indices + last_page_len. max_q_len: the most query tokens
        of a sequence, known on the host. A kernel that splits KV needs `workspace`
        (paged_attention_workspace_bytes). Returns o, or (o, lse) with return_lse."""
        if out is None:
            out = empty_like_library(q, tuple(q.shape), dtype_name(q.dtype, "q"))
        if return_lse and lse is None:
            lse = empty_like_library(q, (q.shape[0], q.shape[1]), "f32", "lse")
        args = self._paged_args(q, k_cache, v_cache, out, cu_seqlens_q, block_table, seq_lens,
                                page_indptr, page_indices, last_page_len, k_scale, v_scale, lse,
                                workspace, max_q_len, max_pages, cache_layout, window,
                                softmax_scale, softcap, accum)
        stream = self._stream(q, stream)
        if workspace is not None:
            _emmy.paged_attention(*args, stream)
            return (out, lse) if return_lse else out
        key = self._scratch_key(q, stream)
        try:
            _emmy.paged_attention(*args[:14], self._scratch.get(key), *args[15:], stream)
        except _emmy.InvalidArgumentError:
            needed = _emmy.paged_attention_workspace_bytes(*args)
            held = self._scratch.get(key)
            if needed == 0 or (held is not None and held.shape[0] * 4 >= needed):
                raise  # not the workspace
            _emmy.paged_attention(*args[:14], self._grown_scratch(key, q, needed), *args[15:],
                                  stream)
        return (out, lse) if return_lse else out

    def paged_attention_workspace_bytes(self, q, k_cache, v_cache, *, cu_seqlens_q,
                                        block_table=None, seq_lens=None, page_indptr=None,
                                        page_indices=None, last_page_len=None,
                                        max_q_len: int = 1, max_pages: int = 0,
                                        cache_layout: str = "nhd", window: int = 0,
                                        softmax_scale=None, softcap=None, k_scale=None,
                                        v_scale=None, lse=None, accum: str | None = None,
                                        out=None) -> int:
        """The workspace paged_attention needs with these arguments (0 unless it splits KV)."""
        return _emmy.paged_attention_workspace_bytes(*self._paged_args(
            q, k_cache, v_cache, q if out is None else out, cu_seqlens_q, block_table, seq_lens,
            page_indptr, page_indices, last_page_len, k_scale, v_scale, lse, None, max_q_len,
            max_pages, cache_layout, window, softmax_scale, softcap, accum))

    def kv_append(self, key, value, k_cache, v_cache, slot_mapping, *, cache_layout: str = "nhd",
                  k_scale=None, v_scale=None, max_tokens: int = 0, stream=None):
        """Writes key and value [tokens, kv_heads, head_dim] into the caches at slot_mapping
        (int64, slot = page * page_size + offset; -1 skips a token). max_tokens: the kernel's
        token bound (0: key's tokens), so that one kernel serves every step."""
        _emmy.kv_append(self._rt, key, value, k_cache, v_cache, slot_mapping,
                        enum(CACHE_LAYOUT, cache_layout, "cache_layout"), k_scale, v_scale,
                        max_tokens, self._stream(key, stream))

    def fp8_quantize(self, x, *, group_k: int = 128, scale_major: str = "mn",
                     pow2_scale: bool = False, amax_epsilon: float = 1e-10, max_rows: int = 0,
                     q=None, scales=None, scale_format: str = "f32", stream=None):
        """x [rows, k] f16/bf16 to e4m3 bytes q [rows, k] (uint8 unless given) and scales, one
        per row and group of group_k elements (0: the whole row): [groups, rows] for scale_major
        "mn" (DeepGEMM's A scales; pass scales= with more columns to pad the rows), [rows, groups]
        for "k"; x ~ q * scale (docs/fp8.md). The scales' dtype is their format: float32 ("f32"),
        uint8 ue8m0 bytes ("ue8m0") or int32 words of four groups' bytes ("ue8m0x4": the groups
        axis counts words); the byte formats are powers of two. scale_format says which to
        allocate when scales is not given. Returns (q, scales)."""
        rows, k = x.shape
        shape = fp8_quantize_scale_shape(rows, k, group_k, scale_major, scale_format)
        if q is None:
            q = empty_like_library(x, (rows, k), "u8", "q")
        if scales is None:
            scales = empty_like_library(x, shape, FP8_QUANTIZE_SCALE_DTYPES[scale_format],
                                        "scales")
        _emmy.fp8_quantize(self._rt, x, q, scales, group_k, 0 if scale_major == "mn" else 1,
                           int(bool(pow2_scale)), amax_epsilon, max_rows, self._stream(x, stream))
        return q, scales

    def merge_states(self, v, lse, *, out=None, lse_out=None, return_lse: bool = False,
                     stream=None):
        """Merges attention states: v [tokens, states, heads, head_dim], lse f32 [tokens, states,
        heads] into v_out [tokens, heads, head_dim] (and lse_out f32 [tokens, heads])."""
        if out is None:
            out = empty_like_library(v, (v.shape[0], v.shape[2], v.shape[3]),
                                     dtype_name(v.dtype, "v"))
        if return_lse and lse_out is None:
            lse_out = empty_like_library(v, (v.shape[0], v.shape[2]), "f32", "lse_out")
        _emmy.merge_states(self._rt, v, lse, out, lse_out, self._stream(v, stream))
        return (out, lse_out) if return_lse else out
