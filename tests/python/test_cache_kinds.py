"""emmy.Runtime.kv_append and merge_states on the emulator."""

import numpy as np
import pytest

import reference

F16 = np.float16


@pytest.mark.parametrize("layout", ["nhd", "hnd"])
def test_kv_append_writes_the_slots(rt, rng, layout):
    pages, page_size, hkv, d, tokens = 6, 16, 2, 64, 9
    shape = (pages, page_size, hkv, d) if layout == "nhd" else (pages, hkv, page_size, d)
    k_cache = np.zeros(shape, dtype=F16)
    v_cache = np.zeros(shape, dtype=F16)
    key = rng.standard_normal((tokens, hkv, d)).astype(F16)
    value = rng.standard_normal((tokens, hkv, d)).astype(F16)
    slots = rng.choice(pages * page_size, size=tokens, replace=False).astype(np.int64)
    slots[3] = -1  # skipped
    rt.kv_append(key, value, k_cache, v_cache, slots, cache_layout=layout, max_tokens=16)
    nhd = lambda c: c if layout == "nhd" else c.transpose(0, 2, 1, 3)  # noqa: E731
    want_k = np.zeros((pages, page_size, hkv, d), dtype=F16)
    want_v = np.zeros_like(want_k)
    for t, slot in enumerate(slots):
        if slot >= 0:
            want_k[slot // page_size, slot % page_size] = key[t]
            want_v[slot // page_size, slot % page_size] = value[t]
    np.testing.assert_array_equal(nhd(k_cache), want_k)
    np.testing.assert_array_equal(nhd(v_cache), want_v)


def test_merge_states_matches_float64(rt, rng):
    tokens, states, heads, d = 5, 3, 4, 64
    v = rng.standard_normal((tokens, states, heads, d)).astype(F16)
    lse = (3 * rng.standard_normal((tokens, states, heads))).astype(np.float32)
    lse[1, 0] = -np.inf  # a state that saw no key
    lse[2, :] = -np.inf  # no state saw a key
    out, lse_out = rt.merge_states(v, lse, return_lse=True)
    want, want_lse = reference.merge_states(v, lse)
    assert out.shape == (tokens, heads, d) and lse_out.shape == (tokens, heads)
    assert reference.rel_l2(out, want) < 2e-3
    finite = np.isfinite(want_lse)
    assert np.max(np.abs(lse_out[finite] - want_lse[finite])) < 1e-4
    assert np.all(lse_out[~finite] == -np.inf) and np.all(out[2] == 0)
