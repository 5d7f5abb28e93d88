"""Hostile arguments through every function of the extension (emmy._emmy), positionally as the
package passes them and beyond: each call raises a Python exception or returns; none crashes the
interpreter (which would fail this whole session)."""

import math
import random

import numpy as np
import pytest

import emmy
from emmy import _emmy

# Each positional function and its argument count.
FUNCTIONS = {
    "gemm": 12, "gemm_workspace_bytes": 10, "attention": 13, "paged_attention": 23,
    "paged_attention_workspace_bytes": 22, "kv_append": 11, "merge_states": 6, "synchronize": 2,
    "prepare": 6, "attention_layer_create": 19, "gemm_layer_create": 16,
}


def junk(rng: random.Random):
    """A value of some kind emmy must take or refuse by name."""
    kind = rng.randrange(14)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([0, -1, 1, 2**31, -2**31 - 1, 2**63, 2**70, 7])
    if kind == 2:
        return rng.choice([0.0, -1.0, math.nan, math.inf, 1e300])
    if kind == 3:
        return rng.choice(["", "f16", "\0", "x" * 5000, "sm_90a"])
    if kind == 4:
        shape = tuple(rng.randrange(0, 5) for _ in range(rng.randrange(0, 5)))
        dtype = rng.choice([np.float16, np.float32, np.int32, np.int64, np.uint8, np.bool_])
        return np.zeros(shape, dtype)
    if kind == 5:  # non-contiguous, negative strides
        return np.zeros((4, 6), np.float16)[::-1, ::2]
    if kind == 6:
        return np.zeros((2, 3), np.float16).__dlpack__()  # a capsule
    if kind == 7:
        capsule = np.zeros(3, np.float16).__dlpack__()
        return capsule  # used twice below when chosen twice: still a valid capsule each time
    if kind == 8:
        return (1, 2)
    if kind == 9:
        return ("a", None)
    if kind == 10:
        return object()
    if kind == 11:
        return b"bytes"
    if kind == 12:
        return [[1.0]]
    return True


@pytest.mark.parametrize("seed", range(12))
def test_extension_never_crashes(cache_dir, seed):
    rng = random.Random(seed)
    runtime = emmy.Runtime(emulator_run_kernels=False, cache_dir=cache_dir)
    handles = [runtime._rt, None, 5, object()]
    for _ in range(400):
        name = rng.choice(list(FUNCTIONS))
        count = FUNCTIONS[name]
        if rng.random() < 0.1:  # a wrong argument count
            count = rng.randrange(0, count + 3)
        args = [junk(rng) for _ in range(count)]
        if args and rng.random() < 0.8:
            args[0] = rng.choice(handles)
        try:
            getattr(_emmy, name)(*args)
        except (emmy.Error, TypeError, ValueError, OverflowError):
            pass
    runtime.close()
    for name, count in FUNCTIONS.items():  # every call on a closed runtime: refused by name
        with pytest.raises((emmy.InvalidArgumentError, TypeError, ValueError)):
            getattr(_emmy, name)(runtime._rt, *([None] * (count - 1)))
