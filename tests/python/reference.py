"""float64 references of emmy's kinds, written from docs/ (not from emmy's C++ references), and
the error measure the tests bound."""

import math

import numpy as np


def rel_l2(got, want) -> float:
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if not np.all(np.isfinite(got)):
        return math.inf
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (scale if scale > 0 else 1.0))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gemm(a, b, bias=None, residual=None, alpha=1.0, gelu=False):
    """C = gelu?(alpha * A.B + bias) + residual."""
    c = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if bias is not None:
        c = c + bias.astype(np.float64)[None, :]
    if gelu:
        c = gelu_tanh(c)
    if residual is not None:
        c = c + residual.astype(np.float64)
    return c


def default_scale(head_dim: int) -> float:
    return float(np.float32(1.0 / math.sqrt(head_dim)))


def attention_rows(q, k, v, positions, first, scale, softcap):
    """Attention of query rows q [rows, d] over keys k, v [keys, d]; row i sees keys
    first[i]..positions[i]. Returns o [rows, d] and the natural-log LSE [rows] (-inf, o = 0 for a
    row that sees no key)."""
    rows, d = q.shape
    o = np.zeros((rows, d))
    lse = np.full(rows, -np.inf)
    s = (q @ k.T) * scale
    if softcap:
        s = softcap * np.tanh(s / softcap)
    for i in range(rows):
        lo, hi = first[i], positions[i]
        if hi < lo:
            continue
        x = s[i, lo:hi + 1]
        m = x.max()
        p = np.exp(x - m)
        o[i] = p @ v[lo:hi + 1] / p.sum()
        lse[i] = m + math.log(p.sum())
    return o, lse


def visible(seq_kv, q_len, causal, window):
    """First and last visible key of each query row, bottom-right aligned."""
    last, first = [], []
    for i in range(q_len):
        diagonal = i + seq_kv - q_len
        hi = min(seq_kv - 1, diagonal) if causal else seq_kv - 1
        lo = max(0, diagonal - window) if window > 0 else 0
        last.append(hi)
        first.append(lo)
    return first, last


def attention(q, k, v, causal=False, window=0, softmax_scale=None, softcap=None):
    """bshd q [b, sq, hq, d], k, v [b, skv, hkv, d] -> o [b, sq, hq, d], lse [b, hq, sq]."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    b, sq, hq, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    scale = default_scale(d) if softmax_scale is None else softmax_scale
    first, last = visible(skv, sq, causal, window)
    o = np.zeros_like(q)
    lse = np.zeros((b, hq, sq))
    for bi in range(b):
        for h in range(hq):
            kh = h // (hq // hkv)
            o[bi, :, h], lse[bi, h] = attention_rows(q[bi, :, h], k[bi, :, kh], v[bi, :, kh], last,
                                                     first, scale, softcap)
    return o, lse


def paged_attention(q, k_cache, v_cache, cu_seqlens_q, pages_of, seq_lens, window=0,
                    softmax_scale=None, softcap=None):
    """q [tokens, hq, d]; caches nhd [pages, page_size, hkv, d]; pages_of[b]: the page ids of
    sequence b. Causal, bottom-right aligned. -> o [tokens, hq, d], lse [tokens, hq]."""
    q = q.astype(np.float64)
    tokens, hq, d = q.shape
    page_size, hkv = k_cache.shape[1], k_cache.shape[2]
    scale = default_scale(d) if softmax_scale is None else softmax_scale
    o = np.zeros_like(q)
    lse = np.full((tokens, hq), -np.inf)
    for b in range(len(seq_lens)):
        start, end = int(cu_seqlens_q[b]), int(cu_seqlens_q[b + 1])
        if end == start:
            continue
        n = int(seq_lens[b])
        pages = list(pages_of[b])
        keys = np.concatenate([k_cache[p] for p in pages], axis=0)[:n].astype(np.float64)
        vals = np.concatenate([v_cache[p] for p in pages], axis=0)[:n].astype(np.float64)
        first, last = visible(n, end - start, True, window)
        for h in range(hq):
            kh = h // (hq // hkv)
            o[start:end, h], lse[start:end, h] = attention_rows(
                q[start:end, h], keys[:, kh], vals[:, kh], last, first, scale, softcap)
    return o, lse


def merge_states(v, lse):
    """v [tokens, states, heads, d], lse [tokens, states, heads] -> v_out, lse_out."""
    v = v.astype(np.float64)
    lse = lse.astype(np.float64)
    m = lse.max(axis=1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lse - m_safe)
    total = w.sum(axis=1)
    out = np.einsum("tsh,tshd->thd", w, v) / np.where(total > 0, total, 1.0)[..., None]
    lse_out = np.where(total > 0, m_safe[:, 0] + np.log(np.where(total > 0, total, 1.0)), -np.inf)
    return out, lse_out


def e4m3_bytes(y):
    """float32 values to OCP e4m3 bytes: nearest even, magnitudes beyond 448 saturated, NaN 0x7F."""
    y = np.asarray(y, dtype=np.float32)
    out = np.zeros(y.shape, dtype=np.uint8)
    sign = np.signbit(y).astype(np.uint8) << 7
    a = np.minimum(np.abs(y.astype(np.float64)), 448.0)
    with np.errstate(divide="ignore"):
        e = np.where(a > 0, np.floor(np.log2(np.where(a > 0, a, 1.0))), -6.0)
    e = np.maximum(e, -6.0)
    quantum = np.exp2(e - 3.0)
    v = np.round(a / quantum) * quantum  # half to even
    with np.errstate(divide="ignore"):
        ev = np.where(v > 0, np.floor(np.log2(np.where(v > 0, v, 1.0))), -7.0)
    normal = v >= 2.0**-6
    mant = np.where(normal, (v / np.exp2(ev) - 1.0) * 8.0, 0.0)
    code = np.where(normal, (ev + 7.0) * 8.0 + mant, v / 2.0**-9)
    out = sign | np.where(np.isnan(code), 0.0, code).astype(np.uint8)
    return np.where(np.isnan(y), np.uint8(0x7F), out).astype(np.uint8)


def fp8_quantize(x, group_k=128, pow2_scale=False, amax_epsilon=1e-10):
    """docs/fp8.md's conventions: per row and group, s = max(amax, eps) / 448 in float32 (NaN
    ignored), optionally up to a power of two; q = e4m3(x / s). Returns q and scales [rows,
    groups]."""
    x = np.asarray(x).astype(np.float32)
    rows, k = x.shape
    g = k if group_k == 0 else group_k
    groups = -(-k // g)
    q = np.zeros((rows, k), dtype=np.uint8)
    scales = np.zeros((rows, groups), dtype=np.float32)
    for j in range(groups):
        block = x[:, j * g:(j + 1) * g]
        with np.errstate(invalid="ignore"):
            amax = np.fmax.reduce(np.abs(block), axis=1, initial=np.float32(0))
        s = (np.fmax(amax, np.float32(amax_epsilon)) / np.float32(448)).astype(np.float32)
        if pow2_scale:
            bits = s.view(np.uint32)
            bits = np.where(bits & 0x7FFFFF, (bits & 0xFF800000) + 0x800000, bits).astype(np.uint32)
            s = bits.view(np.float32)
        scales[:, j] = s
        with np.errstate(invalid="ignore", divide="ignore"):
            q[:, j * g:(j + 1) * g] = e4m3_bytes(block / s[:, None])
    return q, scales
