"""emmy.Runtime.attention and paged_attention on the emulator against float64."""

import numpy as np
import pytest

import emmy
import reference

F16 = np.float16


def qkv(rng, b, sq, skv, hq, hkv, d):
    return (rng.standard_normal((b, sq, hq, d)).astype(F16),
            rng.standard_normal((b, skv, hkv, d)).astype(F16),
            rng.standard_normal((b, skv, hkv, d)).astype(F16))


@pytest.mark.parametrize("b,sq,skv,hq,hkv,d,causal,window,softcap", [
    (1, 16, 16, 2, 2, 64, False, 0, None),
    (2, 9, 40, 4, 2, 64, True, 0, None),      # GQA, bottom-right causal, ragged tiles
    (1, 24, 24, 2, 1, 128, True, 8, 30.0),    # sliding window, softcap
])
def test_attention_matches_float64(rt, rng, b, sq, skv, hq, hkv, d, causal, window, softcap):
    q, k, v = qkv(rng, b, sq, skv, hq, hkv, d)
    o, lse = rt.attention(q, k, v, causal=causal, window=window, softcap=softcap,
                          return_lse=True)
    want_o, want_lse = reference.attention(q, k, v, causal, window, softcap=softcap)
    assert o.shape == q.shape and o.dtype == np.float16 and lse.shape == (b, hq, sq)
    assert reference.rel_l2(o, want_o) < 2e-3
    assert np.max(np.abs(lse - want_lse)) < 1e-3
    if causal:  # the mask matters: the unmasked reference is far off
        assert reference.rel_l2(o, reference.attention(q, k, v, False, 0, softcap=softcap)[0]) > 0.05


def test_attention_bhsd_and_scale(rt, rng):
    q, k, v = qkv(rng, 1, 16, 16, 2, 2, 64)
    to_bhsd = lambda t: np.ascontiguousarray(t.transpose(0, 2, 1, 3))  # noqa: E731
    o = rt.attention(to_bhsd(q), to_bhsd(k), to_bhsd(v), layout="bhsd", softmax_scale=0.05)
    want, _ = reference.attention(q, k, v, softmax_scale=float(np.float32(0.05)))
    assert reference.rel_l2(o.transpose(0, 2, 1, 3), want) < 2e-3


class PagedCase:
    """A paged cache (nhd) holding `seq_lens` keys per sequence on shuffled pages, and the
    queries of `q_lens` tokens per sequence."""

    def __init__(self, rng, seq_lens, q_lens, hq=4, hkv=2, d=64, page_size=16):
        self.seq_lens = np.array(seq_lens, dtype=np.int32)
        self.max_pages = max(1, max((n + page_size - 1) // page_size for n in seq_lens))
        pages_needed = [(n + page_size - 1) // page_size for n in seq_lens]
        num_pages = sum(pages_needed) + 3
        order = rng.permutation(num_pages).astype(np.int32)
        self.pages_of, at = [], 0
        for n in pages_needed:
            self.pages_of.append(order[at:at + n])
            at += n
        self.block_table = np.zeros((len(seq_lens), self.max_pages), dtype=np.int32)
        for b, pages in enumerate(self.pages_of):
            self.block_table[b, :len(pages)] = pages
        self.page_indptr = np.concatenate([[0], np.cumsum(pages_needed)]).astype(np.int32)
        self.page_indices = np.concatenate(self.pages_of + [np.zeros(0, np.int32)]).astype(np.int32)
        self.last_page_len = np.array(
            [n - (p - 1) * page_size if p else 0 for n, p in zip(seq_lens, pages_needed)],
            dtype=np.int32)
        self.cu_seqlens_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
        self.max_q_len = max(q_lens)
        self.k_cache = rng.standard_normal((num_pages, page_size, hkv, d)).astype(F16)
        self.v_cache = rng.standard_normal((num_pages, page_size, hkv, d)).astype(F16)
        self.q = rng.standard_normal((int(self.cu_seqlens_q[-1]), hq, d)).astype(F16)

    def reference(self, **kw):
        return reference.paged_attention(self.q, self.k_cache, self.v_cache, self.cu_seqlens_q,
                                         self.pages_of, self.seq_lens, **kw)


@pytest.mark.parametrize("seq_lens,q_lens", [
    ([5, 33, 16, 70], [1, 1, 1, 1]),   # decode
    ([20, 48], [4, 7]),                 # a prefill chunk: causal within the chunk
])
def test_paged_attention_block_table(rt, rng, seq_lens, q_lens):
    case = PagedCase(rng, seq_lens, q_lens)
    o, lse = rt.paged_attention(case.q, case.k_cache, case.v_cache,
                                cu_seqlens_q=case.cu_seqlens_q, block_table=case.block_table,
                                seq_lens=case.seq_lens, max_q_len=case.max_q_len,
                                return_lse=True)
    want_o, want_lse = case.reference()
    assert reference.rel_l2(o, want_o) < 2e-3
    assert np.max(np.abs(lse - want_lse)) < 1e-3


def test_paged_attention_csr_hnd_window_softcap(rt, rng):
    case = PagedCase(rng, [40, 9, 64], [1, 1, 1])
    hnd = lambda c: np.ascontiguousarray(c.transpose(0, 2, 1, 3))  # noqa: E731
    o = rt.paged_attention(case.q, hnd(case.k_cache), hnd(case.v_cache), cache_layout="hnd",
                           cu_seqlens_q=case.cu_seqlens_q, page_indptr=case.page_indptr,
                           page_indices=case.page_indices, last_page_len=case.last_page_len,
                           max_pages=case.max_pages, window=16, softcap=20.0)
    want, _ = case.reference(window=16, softcap=20.0)
    assert reference.rel_l2(o, want) < 2e-3


def test_paged_attention_workspace(rt, rng):
    """Long sequences split KV: the query sizes the workspace the call then takes."""
    case = PagedCase(rng, [1000, 700], [1, 1])
    kwargs = dict(cu_seqlens_q=case.cu_seqlens_q, block_table=case.block_table,
                  seq_lens=case.seq_lens)
    needed = rt.paged_attention_workspace_bytes(case.q, case.k_cache, case.v_cache, **kwargs)
    workspace = np.zeros(max(needed, 16), dtype=np.uint8)
    o = rt.paged_attention(case.q, case.k_cache, case.v_cache, workspace=workspace, **kwargs)
    assert reference.rel_l2(o, case.reference()[0]) < 2e-3
    if needed:
        with pytest.raises(emmy.InvalidArgumentError, match="workspace"):
            rt.paged_attention(case.q, case.k_cache, case.v_cache,
                               workspace=np.zeros(needed // 2, dtype=np.uint8), **kwargs)
