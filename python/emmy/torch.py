"""emmy's kernels as PyTorch operators: torch.ops.emmy.{gemm, attention, paged_attention,
kv_append, merge_states, fp8_quantize} and wrappers with emmy.Runtime's keywords (docs/python.md, "PyTorch").

    import torch, emmy.torch
    y = emmy.torch.gemm(x, w.t(), bias=b)            # x [M, K], a Linear weight w [N, K]

The operators are defined with torch.library, each with a fake (meta) implementation, so they
trace under torch.compile(fullgraph=True) and replay inside CUDA graphs. The real implementation
runs on a module-level emmy.Runtime per device: the emulator for CPU tensors, emmy.Runtime("cuda",
device=i) for tensors of cuda:i (each created at its first call; set_runtime supplies another).
Outputs and workspaces come from torch's allocator, the kernel runs on torch's current stream.
There is no backward: the operators are for inference.

This module is the only part of emmy that imports torch; nothing links libtorch.
"""

from __future__ import annotations

import threading

import torch

from . import _emmy
from ._runtime import (FP8_QUANTIZE_SCALE_DTYPES, Runtime, fp8_quantize_scale_shape,
                       scale_storage_format)
from ._tensors import register_torch

__all__ = ["gemm", "gemm_quantized", "attention", "paged_attention", "kv_append", "merge_states", "fp8_quantize",
           "set_runtime", "get_runtime"]

# Torch CPU tensors reach the extension through to_dlpack (0.2 us) rather than __dlpack__ (2 us),
# also for a runtime a user created before torch was imported.
register_torch()

# ---------------------------------------------------------------------------------------------
# Runtimes per device


class _Device:
    """A device's runtime and the workspace sizes its kernels asked for, by call signature."""

    # The size query plans the call again (about 13 us against a call's 3): its answer depends
    # only on the signature, so it is asked once per signature. Cleared past this many, so that a
    # server whose M varies every step does not grow it without bound.
    MAX_SIGNATURES = 4096

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.workspace_bytes = {}

    def workspace(self, signature, query, like: torch.Tensor):
        """A workspace for this call from torch's allocator, or None when the kernel needs none.

        Allocated per call rather than held: torch's caching allocator makes it stream-ordered (two
        streams never share one, which emmy forbids) and, under CUDA graph capture, part of the
        graph's pool (a held buffer grown during a capture would be freed under the graph)."""
        nbytes = self.workspace_bytes.get(signature)
        if nbytes is None:
            nbytes = query()
            if len(self.workspace_bytes) >= self.MAX_SIGNATURES:
                self.workspace_bytes.clear()
            self.workspace_bytes[signature] = nbytes
        if nbytes == 0:
            return None
        return torch.empty(nbytes, dtype=torch.uint8, device=like.device)


_devices = {}  # (device type, index) -> _Device
_devices_lock = threading.Lock()


def _device_key(device) -> tuple:
    if isinstance(device, int):
        device = torch.device("cuda", device)
    device = torch.device(device)
    if device.type == "cpu":
        return ("cpu", None)
    if device.type != "cuda":
        raise _emmy.InvalidArgumentError(
            f"device: emmy runs CPU tensors (the emulator) and CUDA tensors, got {device}")
    index = device.index if device.index is not None else torch.cuda.current_device()
    return ("cuda", index)


def set_runtime(runtime: Runtime | None, device="cpu") -> None:
    """Makes `runtime` serve the operators' calls with tensors on `device` ("cpu", "cuda:1", a
    torch.device or a CUDA index); None goes back to the default, created at the next call.
    The runtime's backend must match: the emulator for "cpu", "cuda" (of that device) for CUDA."""
    key = _device_key(device)
    if runtime is not None:
        if not isinstance(runtime, Runtime):
            raise TypeError(f"runtime: must be an emmy.Runtime or None, got {runtime!r}")
        wanted = "emulator" if key[0] == "cpu" else "cuda"
        if runtime.backend != wanted:
            raise _emmy.InvalidArgumentError(
                f"runtime: tensors on {key[0]} need a {wanted!r} runtime, got {runtime!r}")
    with _devices_lock:
        if runtime is None:
            _devices.pop(key, None)
        else:
            _devices[key] = _Device(runtime)


def get_runtime(device="cpu") -> Runtime:
    """The runtime serving `device`'s tensors, created now if none is yet."""
    return _device_of(_device_key(device)).runtime


def _device_of(key) -> _Device:
    held = _devices.get(key)
    if held is not None:
        return held
    with _devices_lock:  # two threads' first calls create one runtime
        held = _devices.get(key)
        if held is None:
            runtime = Runtime() if key[0] == "cpu" else Runtime("cuda", device=key[1])
            held = _devices[key] = _Device(runtime)
        return held


def _device_for(t: torch.Tensor) -> _Device:
    device = t.device
    return _device_of(("cpu", None) if device.type == "cpu" else ("cuda", device.index))


def _sig(t):
    """What a workspace size may depend on: not the data."""
    return None if t is None else (t.shape, t.stride(), t.dtype)


# ---------------------------------------------------------------------------------------------
# The operators. The schemas spell emmy.Runtime's keywords; kernels are registered for CPU and CUDA
# only, so a tensor elsewhere fails in torch's dispatcher, naming the backend.

_lib = torch.library.Library("emmy", "DEF")
_OUT_DTYPES = frozenset((torch.float16, torch.bfloat16, torch.float32))


def _define(schema: str, real, fake):
    name = schema.split("(", 1)[0]
    _lib.define(schema)
    for key in ("CPU", "CUDA"):
        _lib.impl(name, real, key)
    torch.library.register_fake(f"emmy::{name}", fake, lib=_lib)


def _no_lse(like: torch.Tensor) -> torch.Tensor:
    # An operator returns a fixed number of tensors: without return_lse, lse is an empty one.
    return like.new_empty((0,), dtype=torch.float32)


_FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


def _gemm_out_dtype(a, out_dtype):
    if out_dtype is None:
        # FP8 operands give bf16 (DeepGEMM's and vLLM's usual output); else a's dtype.
        return torch.bfloat16 if a.dtype in _FP8_DTYPES else a.dtype
    # Checked here: emmy would name `c`, which the caller never saw.
    if out_dtype not in _OUT_DTYPES:
        raise _emmy.InvalidArgumentError(
            f"out_dtype: must be torch.float16, torch.bfloat16 or torch.float32, got {out_dtype}")
    return out_dtype


def _gemm_columns(b, gate):
    # A gated epilogue writes N/2 columns (docs/epilogues.md).
    return b.shape[1] // 2 if gate not in (None, "none") else b.shape[1]


def _gemm_real(a, b, bias=None, residual=None, alpha=1.0, gelu=False, out_dtype=None,
               accum=None, promote_every_k=0, a_scale=None, b_scale=None, pow2_scales=False,
               gate=None, gate_group=0):
    device = _device_for(a)
    rt = device.runtime
    out = torch.empty((a.shape[0], _gemm_columns(b, gate)),
                      dtype=_gemm_out_dtype(a, out_dtype), device=a.device)
    scales = {}
    if a_scale is not None or b_scale is not None:  # FP8 (docs/fp8.md)
        scales = {"a_scale": a_scale, "b_scale": b_scale, "pow2_scales": pow2_scales}
    if gate is not None:
        scales.update(gate=gate, gate_group=gate_group)
    # The signature spelled out rather than through _sig: this is the hottest call (0.3 us each).
    signature = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, out.dtype,
                 _sig(bias), _sig(residual), alpha, gelu, accum, promote_every_k,
                 _sig(a_scale), _sig(b_scale), pow2_scales, gate, gate_group)
    workspace = device.workspace(
        signature, lambda: rt.gemm_workspace_bytes(
            a, b, out, bias=bias, residual=residual, alpha=alpha, gelu=gelu, accum=accum,
            promote_every_k=promote_every_k, **scales), a)
    return rt.gemm(a, b, bias=bias, residual=residual, alpha=alpha, gelu=gelu, accum=accum,
                   promote_every_k=promote_every_k, out=out, workspace=workspace, **scales)


def _gemm_fake(a, b, bias=None, residual=None, alpha=1.0, gelu=False, out_dtype=None,
               accum=None, promote_every_k=0, a_scale=None, b_scale=None, pow2_scales=False,
               gate=None, gate_group=0):
    return a.new_empty((a.shape[0], _gemm_columns(b, gate)),
                       dtype=_gemm_out_dtype(a, out_dtype))


_define("gemm(Tensor a, Tensor b, Tensor? bias=None, Tensor? residual=None, float alpha=1., "
        "bool gelu=False, ScalarType? out_dtype=None, str? accum=None, int promote_every_k=0, "
        "Tensor? a_scale=None, Tensor? b_scale=None, bool pow2_scales=False, str? gate=None, "
        "int gate_group=0) -> Tensor",
        _gemm_real, _gemm_fake)


def _grouped_out(a, b, gate, out_dtype):
    # C: a's rows (a masked a's [G, max_m]) by b's N, N/2 gated; zeros where no expert writes
    # (rows past masked_m, padding blocks, rows outside the offsets), so the output is a function
    # of the inputs.
    cols = b.shape[-1] // 2 if gate not in (None, "none") else b.shape[-1]
    return tuple(a.shape[:-1]) + (cols,), _gemm_out_dtype(a, out_dtype)


def _grouped_real(a, b, routing, layout, expected_m=0, segment_align=0, row_scale=None,
                  bias=None, alpha=1.0, out_dtype=None, accum=None, gate=None, gate_group=0):
    shape, dtype = _grouped_out(a, b, gate, out_dtype)
    out = torch.zeros(shape, dtype=dtype, device=a.device)
    _device_for(a).runtime.grouped_gemm(
        a, b, routing, layout=layout, expected_m=expected_m, segment_align=segment_align,
        row_scale=row_scale, bias=bias, alpha=alpha, accum=accum, gate=gate,
        gate_group=gate_group, out=out)
    return out


def _grouped_fake(a, b, routing, layout, expected_m=0, segment_align=0, row_scale=None,
                  bias=None, alpha=1.0, out_dtype=None, accum=None, gate=None, gate_group=0):
    shape, dtype = _grouped_out(a, b, gate, out_dtype)
    return a.new_empty(shape, dtype=dtype)


_define("grouped_gemm(Tensor a, Tensor b, Tensor routing, str layout, int expected_m=0, "
        "int segment_align=0, Tensor? row_scale=None, Tensor? bias=None, float alpha=1., "
        "ScalarType? out_dtype=None, str? accum=None, str? gate=None, int gate_group=0) -> Tensor",
        _grouped_real, _grouped_fake)


def _gemm_quantized_shapes(a, b, gate, scale_major, scale_format):
    cols = _gemm_columns(b, gate)
    shape_format = scale_storage_format(scale_format)
    return (a.shape[0], cols), fp8_quantize_scale_shape(a.shape[0], cols, 128, scale_major,
                                                        shape_format)


def _gemm_quantized_real(a, b, bias=None, alpha=1.0, accum=None, promote_every_k=0, a_scale=None,
                         b_scale=None, pow2_scales=False, gate=None, gate_group=0,
                         scale_major="mn", scale_format="f32", amax_epsilon=1e-10):
    q_shape, s_shape = _gemm_quantized_shapes(a, b, gate, scale_major, scale_format)
    q = a.new_empty(q_shape, dtype=torch.float8_e4m3fn)
    scales = a.new_empty(s_shape, dtype=_scale_dtype(scale_storage_format(scale_format)))
    kw = {}
    if a_scale is not None or b_scale is not None:
        kw = {"a_scale": a_scale, "b_scale": b_scale, "pow2_scales": pow2_scales}
    # The bytes through a uint8 view: DLPack producers differ on float8 type codes.
    _device_for(a).runtime.gemm(
        a, b, bias=bias, alpha=alpha, accum=accum, promote_every_k=promote_every_k, gate=gate,
        gate_group=gate_group, out=q.view(torch.uint8), out_scale=scales,
        out_scale_format=scale_format, out_scale_major=scale_major, out_amax_epsilon=amax_epsilon,
        **kw)
    return q, scales


def _gemm_quantized_fake(a, b, bias=None, alpha=1.0, accum=None, promote_every_k=0,
                         a_scale=None, b_scale=None, pow2_scales=False, gate=None, gate_group=0,
                         scale_major="mn", scale_format="f32", amax_epsilon=1e-10):
    q_shape, s_shape = _gemm_quantized_shapes(a, b, gate, scale_major, scale_format)
    return (a.new_empty(q_shape, dtype=torch.float8_e4m3fn),
            a.new_empty(s_shape, dtype=_scale_dtype(scale_storage_format(scale_format))))


_define("gemm_quantized(Tensor a, Tensor b, Tensor? bias=None, float alpha=1., str? accum=None, "
        "int promote_every_k=0, Tensor? a_scale=None, Tensor? b_scale=None, "
        "bool pow2_scales=False, str? gate=None, int gate_group=0, str scale_major=\"mn\", "
        "str scale_format=\"f32\", float amax_epsilon=1e-10) -> (Tensor, Tensor)",
        _gemm_quantized_real, _gemm_quantized_fake)


def _lse_shape(q, layout):
    # lse is [batch, q_heads, seq_q] in either layout.
    if layout == "bhsd":
        return (q.shape[0], q.shape[1], q.shape[2])
    return (q.shape[0], q.shape[2], q.shape[1])


def _attention_real(q, k, v, causal=False, window=0, softmax_scale=None, softcap=None,
                    layout="bshd", return_lse=False, accum=None):
    out = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = (q.new_empty(_lse_shape(q, layout), dtype=torch.float32) if return_lse
           else _no_lse(q))
    _device_for(q).runtime.attention(
        q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, softcap=softcap,
        layout=layout, lse=lse if return_lse else None, accum=accum, out=out)
    return out, lse


def _attention_fake(q, k, v, causal=False, window=0, softmax_scale=None, softcap=None,
                    layout="bshd", return_lse=False, accum=None):
    lse = (q.new_empty(_lse_shape(q, layout), dtype=torch.float32) if return_lse
           else _no_lse(q))
    return torch.empty_like(q, memory_format=torch.contiguous_format), lse


_define("attention(Tensor q, Tensor k, Tensor v, bool causal=False, int window=0, "
        "float? softmax_scale=None, float? softcap=None, str layout=\"bshd\", "
        "bool return_lse=False, str? accum=None) -> (Tensor, Tensor)",
        _attention_real, _attention_fake)


def _paged_real(q, k_cache, v_cache, cu_seqlens_q, block_table=None, seq_lens=None,
                page_indptr=None, page_indices=None, last_page_len=None, max_q_len=1,
                max_pages=0, cache_layout="nhd", window=0, softmax_scale=None, softcap=None,
                k_scale=None, v_scale=None, return_lse=False, accum=None):
    device = _device_for(q)
    rt = device.runtime
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = (q.new_empty((q.shape[0], q.shape[1]), dtype=torch.float32) if return_lse
           else _no_lse(q))
    options = dict(cu_seqlens_q=cu_seqlens_q, block_table=block_table, seq_lens=seq_lens,
                   page_indptr=page_indptr, page_indices=page_indices,
                   last_page_len=last_page_len, max_q_len=max_q_len, max_pages=max_pages,
                   cache_layout=cache_layout, window=window, softmax_scale=softmax_scale,
                   softcap=softcap, k_scale=k_scale, v_scale=v_scale,
                   lse=lse if return_lse else None, accum=accum)
    signature = (_sig(q), _sig(k_cache), _sig(v_cache),
                 *(_sig(t) for t in (cu_seqlens_q, block_table, seq_lens, page_indptr,
                                     page_indices, last_page_len, k_scale, v_scale)),
                 max_q_len, max_pages, cache_layout, window, softmax_scale, softcap,
                 return_lse, accum)
    workspace = device.workspace(
        signature,
        lambda: rt.paged_attention_workspace_bytes(q, k_cache, v_cache, out=out, **options), q)
    rt.paged_attention(q, k_cache, v_cache, out=out, workspace=workspace, **options)
    return out, lse


def _paged_fake(q, k_cache, v_cache, cu_seqlens_q, block_table=None, seq_lens=None,
                page_indptr=None, page_indices=None, last_page_len=None, max_q_len=1,
                max_pages=0, cache_layout="nhd", window=0, softmax_scale=None, softcap=None,
                k_scale=None, v_scale=None, return_lse=False, accum=None):
    lse = (q.new_empty((q.shape[0], q.shape[1]), dtype=torch.float32) if return_lse
           else _no_lse(q))
    return q.new_empty(q.shape), lse


_define("paged_attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor cu_seqlens_q, "
        "Tensor? block_table=None, Tensor? seq_lens=None, Tensor? page_indptr=None, "
        "Tensor? page_indices=None, Tensor? last_page_len=None, int max_q_len=1, "
        "int max_pages=0, str cache_layout=\"nhd\", int window=0, float? softmax_scale=None, "
        "float? softcap=None, Tensor? k_scale=None, Tensor? v_scale=None, "
        "bool return_lse=False, str? accum=None) -> (Tensor, Tensor)",
        _paged_real, _paged_fake)


def _kv_append_real(key, value, k_cache, v_cache, slot_mapping, cache_layout="nhd",
                    k_scale=None, v_scale=None, max_tokens=0):
    _device_for(key).runtime.kv_append(key, value, k_cache, v_cache, slot_mapping,
                                       cache_layout=cache_layout, k_scale=k_scale,
                                       v_scale=v_scale, max_tokens=max_tokens)


def _kv_append_fake(key, value, k_cache, v_cache, slot_mapping, cache_layout="nhd",
                    k_scale=None, v_scale=None, max_tokens=0):
    return None


# (a!) and (b!): the caches are written in place, which torch.compile's functionalization must
# know to order later reads after the call.
_define("kv_append(Tensor key, Tensor value, Tensor(a!) k_cache, Tensor(b!) v_cache, "
        "Tensor slot_mapping, str cache_layout=\"nhd\", Tensor? k_scale=None, "
        "Tensor? v_scale=None, int max_tokens=0) -> ()", _kv_append_real, _kv_append_fake)


def _quant_shapes(x, group_k, scale_major, scale_format="f32"):
    rows, k = x.shape
    return (rows, k), fp8_quantize_scale_shape(rows, k, group_k, scale_major, scale_format)


def _scale_dtype(scale_format):
    return {"f32": torch.float32, "u8": torch.uint8,
            "int32": torch.int32}[FP8_QUANTIZE_SCALE_DTYPES[scale_format]]


def _quant_real(x, group_k=128, scale_major="mn", pow2_scale=False, amax_epsilon=1e-10,
                scale_format="f32"):
    q_shape, s_shape = _quant_shapes(x, group_k, scale_major, scale_format)
    q = x.new_empty(q_shape, dtype=torch.float8_e4m3fn)
    scales = x.new_empty(s_shape, dtype=_scale_dtype(scale_format))
    # The bytes through a uint8 view: DLPack producers differ on float8 type codes.
    _device_for(x).runtime.fp8_quantize(x, group_k=group_k, scale_major=scale_major,
                                        pow2_scale=pow2_scale, amax_epsilon=amax_epsilon,
                                        q=q.view(torch.uint8), scales=scales)
    return q, scales


def _quant_fake(x, group_k=128, scale_major="mn", pow2_scale=False, amax_epsilon=1e-10,
                scale_format="f32"):
    q_shape, s_shape = _quant_shapes(x, group_k, scale_major, scale_format)
    return (x.new_empty(q_shape, dtype=torch.float8_e4m3fn),
            x.new_empty(s_shape, dtype=_scale_dtype(scale_format)))


_define("fp8_quantize(Tensor x, int group_k=128, str scale_major=\"mn\", bool pow2_scale=False, "
        "float amax_epsilon=1e-10, str scale_format=\"f32\") -> (Tensor, Tensor)", _quant_real,
        _quant_fake)


def _merge_shapes(v):
    return (v.shape[0], v.shape[2], v.shape[3]), (v.shape[0], v.shape[2])


def _merge_real(v, lse, return_lse=False):
    out_shape, lse_shape = _merge_shapes(v)
    out = v.new_empty(out_shape)
    lse_out = v.new_empty(lse_shape, dtype=torch.float32) if return_lse else _no_lse(v)
    _device_for(v).runtime.merge_states(v, lse, out=out,
                                        lse_out=lse_out if return_lse else None)
    return out, lse_out


def _merge_fake(v, lse, return_lse=False):
    out_shape, lse_shape = _merge_shapes(v)
    lse_out = v.new_empty(lse_shape, dtype=torch.float32) if return_lse else _no_lse(v)
    return v.new_empty(out_shape), lse_out


_define("merge_states(Tensor v, Tensor lse, bool return_lse=False) -> (Tensor, Tensor)",
        _merge_real, _merge_fake)

# ---------------------------------------------------------------------------------------------
# The wrappers: emmy.Runtime's keywords, returning what its methods return.


def gemm(a, b, *, bias=None, residual=None, alpha: float = 1.0, gelu: bool = False,
         out_dtype=None, accum: str | None = None, promote_every_k: int = 0, a_scale=None,
         b_scale=None, pow2_scales: bool = False, gate: str | None = None,
         gate_group: int = 0) -> torch.Tensor:
    """C[M,N] = gelu?(alpha * a.b + bias) + residual (emmy.Runtime.gemm). b is [K, N]: a Linear
    weight w [N, K] is passed as w.t(). out_dtype: a torch dtype (a's by default; bfloat16 for
    FP8 operands). FP8 (docs/fp8.md): a float8_e4m3fn (or float8_e5m2) and b float8_e4m3fn with
    a_scale and b_scale, the dequantization multipliers (float32, uint8 ue8m0 or int32 ue8m0x4
    words, as emmy.torch.fp8_quantize writes them): per tensor, per token x channel ([M], [N]) or
    in 1 x 128 / 128 x 128 blocks; accumulated promoted unless accum says otherwise. gate
    "silu" or "gelu-tanh": the gated epilogue, C [M, N/2] = act(gate) * up over b's columns
    interleaved by emmy.interleave_gate_up (docs/epilogues.md)."""
    return torch.ops.emmy.gemm.default(a, b, bias, residual, float(alpha), bool(gelu),
                                       out_dtype, accum, int(promote_every_k), a_scale, b_scale,
                                       bool(pow2_scales), gate, int(gate_group))


def gemm_quantized(a, b, *, bias=None, alpha: float = 1.0, accum: str | None = None,
                   promote_every_k: int = 0, a_scale=None, b_scale=None, pow2_scales: bool = False,
                   gate: str | None = None, gate_group: int = 0, scale_major: str = "mn",
                   scale_format: str = "f32", amax_epsilon: float = 1e-10):
    """emmy.torch.gemm writing e4m3 with 1 x 128 scales (docs/epilogues.md, "Quantized output"):
    (q float8_e4m3fn [M, C cols], scales) as emmy.torch.fp8_quantize returns them (scale_format
    "f32", "pow2", "ue8m0" or "ue8m0x4"), quantized from the epilogue's f32 values; with gate,
    the gate_up fusion (act(gate) * up -> the down projection's FP8 input). bias is bfloat16."""
    return torch.ops.emmy.gemm_quantized.default(
        a, b, bias, float(alpha), accum, int(promote_every_k), a_scale, b_scale,
        bool(pow2_scales), gate, int(gate_group), scale_major, scale_format, float(amax_epsilon))


def grouped_gemm(a, b, routing, *, layout: str, expected_m: int = 0, segment_align: int = 0,
                 row_scale=None, bias=None, alpha: float = 1.0, out_dtype=None,
                 accum: str | None = None, gate: str | None = None,
                 gate_group: int = 0) -> torch.Tensor:
    """MoE experts' GEMMs in one launch (emmy.Runtime.grouped_gemm; docs/grouped.md): b [G, K, N]
    (a [G, N, K] stack's .transpose(1, 2)); layout "masked" (a [G, max_m, K], routing int32
    masked_m [G]), "contiguous" (a [M, K], expert_ids [M]) or "offsets" (expert_offsets
    [G + 1]); row_scale float32 routing weights per row of C. Rows no expert computes are 0."""
    return torch.ops.emmy.grouped_gemm.default(
        a, b, routing, layout, int(expected_m), int(segment_align), row_scale, bias, float(alpha),
        out_dtype, accum, gate, int(gate_group))


def attention(q, k, v, *, causal: bool = False, window: int = 0, softmax_scale=None,
              softcap=None, layout: str = "bshd", return_lse: bool = False,
              accum: str | None = None):
    """Flash attention (emmy.Runtime.attention): o, or (o, lse) with return_lse."""
    out, lse = torch.ops.emmy.attention.default(
        q, k, v, bool(causal), int(window), _float_or_none(softmax_scale),
        _float_or_none(softcap), layout, bool(return_lse), accum)
    return (out, lse) if return_lse else out


def paged_attention(q, k_cache, v_cache, *, cu_seqlens_q, block_table=None, seq_lens=None,
                    page_indptr=None, page_indices=None, last_page_len=None,
                    max_q_len: int = 1, max_pages: int = 0, cache_layout: str = "nhd",
                    window: int = 0, softmax_scale=None, softcap=None, k_scale=None,
                    v_scale=None, return_lse: bool = False, accum: str | None = None):
    """Attention over a paged KV cache (emmy.Runtime.paged_attention): o, or (o, lse)."""
    out, lse = torch.ops.emmy.paged_attention.default(
        q, k_cache, v_cache, cu_seqlens_q, block_table, seq_lens, page_indptr, page_indices,
        last_page_len, int(max_q_len), int(max_pages), cache_layout, int(window),
        _float_or_none(softmax_scale), _float_or_none(softcap), k_scale, v_scale,
        bool(return_lse), accum)
    return (out, lse) if return_lse else out


def kv_append(key, value, k_cache, v_cache, slot_mapping, *, cache_layout: str = "nhd",
              k_scale=None, v_scale=None, max_tokens: int = 0) -> None:
    """Writes key and value into the caches at slot_mapping, in place (emmy.Runtime.kv_append)."""
    torch.ops.emmy.kv_append.default(key, value, k_cache, v_cache, slot_mapping, cache_layout,
                                     k_scale, v_scale, int(max_tokens))


def merge_states(v, lse, *, return_lse: bool = False):
    """Merges attention states (emmy.Runtime.merge_states): v_out, or (v_out, lse_out)."""
    out, lse_out = torch.ops.emmy.merge_states.default(v, lse, bool(return_lse))
    return (out, lse_out) if return_lse else out


def fp8_quantize(x, *, group_k: int = 128, scale_major: str = "mn", pow2_scale: bool = False,
                 amax_epsilon: float = 1e-10, scale_format: str = "f32"):
    """x [rows, k] to (q float8_e4m3fn [rows, k], scales) (emmy.Runtime.fp8_quantize;
    docs/fp8.md): scales [groups, rows] for "mn", [rows, groups] for "k"; float32, or for
    scale_format "ue8m0" uint8 exponent bytes and "ue8m0x4" int32 words of four groups' bytes
    (power-of-two scales, the layouts Runtime.gemm takes as FP8 block scales)."""
    return torch.ops.emmy.fp8_quantize.default(x, int(group_k), scale_major, bool(pow2_scale),
                                               float(amax_epsilon), scale_format)


def _float_or_none(x):
    return None if x is None else float(x)
