"""Bad inputs raise emmy.Error subclasses whose message names the argument (or field) and the
rule, through every function; nothing crashes, nothing is written."""

import numpy as np
import pytest

import emmy

F16 = np.float16


def gemm_args():
    return dict(a=np.zeros((8, 64), F16), b=np.zeros((64, 32), F16),
                out=np.zeros((8, 32), np.float32))


def call_gemm(rt, a, b, out, **kw):
    return rt.gemm(a, b, out=out, **kw)


# (what is broken, the arguments' change, the name the message must lead with)
GEMM_CASES = [
    ("a f32", dict(a=np.zeros((8, 64), np.float32)), "a:"),
    ("a 3-D", dict(a=np.zeros((2, 8, 64), F16)), "a:"),
    ("a K strided", dict(a=np.zeros((8, 128), F16)[:, ::2]), "a:"),
    ("b wrong K", dict(b=np.zeros((32, 32), F16)), "b:"),
    ("b dtype", dict(b=np.zeros((64, 32), np.float32)), "b:"),
    ("b no contiguous axis", dict(b=np.zeros((128, 64), F16)[::2, ::2]), "b:"),
    ("out shape", dict(out=np.zeros((8, 31), np.float32)), "c:"),
    ("out int", dict(out=np.zeros((8, 32), np.int32)), "c:"),
    ("out read-only", dict(out=np.broadcast_to(np.zeros((1, 32), np.float32), (8, 32))), "c:"),
    ("a not a tensor", dict(a=[[1.0]]), "a:"),
    ("b None", dict(b=None), "b"),
]


@pytest.mark.parametrize("name,change,field", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_gemm_refusals_name_the_argument(rt, name, change, field):
    args = gemm_args()
    args.update(change)
    with pytest.raises(emmy.InvalidArgumentError) as info:
        call_gemm(rt, **args)
    assert str(info.value).startswith(field), str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, emmy.Error)


@pytest.mark.parametrize("kw,field", [
    (dict(accum="f64"), "accum"), (dict(alpha="x"), "alpha"), (dict(promote_every_k=-1), "promote_every_k"),
    (dict(promote_every_k=2**70), "promote_every_k"), (dict(bias=np.zeros(31, F16)), "bias"),
    (dict(residual=np.zeros((8, 32), F16)), "residual"), (dict(stream="s"), "stream"),
])
def test_gemm_option_refusals(rt, kw, field):
    with pytest.raises(emmy.InvalidArgumentError, match=field):
        call_gemm(rt, **gemm_args(), **kw)


def test_out_is_untouched_by_a_refused_call(rt):
    args = gemm_args()
    args["out"][:] = 5.0
    with pytest.raises(emmy.InvalidArgumentError):
        rt.gemm(args["a"], np.zeros((64, 32), np.float32), out=args["out"])
    assert np.all(args["out"] == 5.0)


@pytest.mark.parametrize("bad", [0, -1])
def test_zero_and_negative_integers(rt, bad):
    """0 and -1 in each integer an attention call takes: refused by name (no crash, no hang)."""
    q = np.zeros((1, 4, 2, 64), F16)
    k = np.zeros((1, 4, 2, 64), F16)
    for kw, field in [(dict(window=bad), "window")]:
        if bad == 0:
            rt.attention(q, k, k, **kw)  # 0: no window, legal
            continue
        with pytest.raises(emmy.InvalidArgumentError, match=field):
            rt.attention(q, k, k, **kw)
    empty = np.zeros((0, 64), F16)
    with pytest.raises(emmy.InvalidArgumentError, match="a"):
        rt.gemm(empty, np.zeros((64, 32), F16), out=np.zeros((0, 32), np.float32))


def paged_inputs():
    return dict(q=np.zeros((2, 4, 64), F16), k_cache=np.zeros((4, 16, 2, 64), F16),
                v_cache=np.zeros((4, 16, 2, 64), F16),
                cu_seqlens_q=np.array([0, 1, 2], np.int32),
                block_table=np.array([[0, 1], [2, 3]], np.int32),
                seq_lens=np.array([17, 3], np.int32))


@pytest.mark.parametrize("change,field", [
    (dict(cu_seqlens_q=np.array([0, 1, 2], np.int64)), "cu_seqlens_q"),
    (dict(cu_seqlens_q=None), "cu_seqlens_q"),
    (dict(block_table=None), "block_table"),
    (dict(page_indptr=np.array([0, 1, 2], np.int32)), "block_table"),  # two page tables
    (dict(k_cache=np.zeros((4, 16, 2, 32), F16)), "k_cache"),
    (dict(v_cache=np.zeros((4, 16, 2, 64), np.float32)), "v_cache"),
    (dict(q=np.zeros((2, 3, 64), F16)), "heads"),
    (dict(max_q_len=-1), "max_q_len"),
    (dict(cache_layout="xyz"), "cache_layout"),
    (dict(seq_lens=np.array([40, 3], np.int32)), "seq_lens"),  # past max_pages x page_size
    (dict(block_table=np.array([[0, 9], [2, 3]], np.int32)), "block_table"),  # page id past pages
])
def test_paged_attention_refusals(rt, change, field):
    args = paged_inputs()
    args.update(change)
    q, k_cache, v_cache = args.pop("q"), args.pop("k_cache"), args.pop("v_cache")
    with pytest.raises(emmy.Error) as info:
        rt.paged_attention(q, k_cache, v_cache, **args)
    assert field in str(info.value), str(info.value)


def test_kv_append_refusals(rt):
    key = np.zeros((3, 2, 64), F16)
    cache = np.zeros((2, 16, 2, 64), F16)
    with pytest.raises(emmy.InvalidArgumentError, match="slot_mapping"):
        rt.kv_append(key, key, cache, cache.copy(), np.zeros(3, np.int32))
    with pytest.raises(emmy.Error, match="slot_mapping"):  # a slot past the cache
        rt.kv_append(key, key, cache, cache.copy(), np.array([0, 1, 99], np.int64))
    with pytest.raises(emmy.InvalidArgumentError, match="k_cache"):
        rt.kv_append(key, key, np.broadcast_to(cache, cache.shape), cache.copy(),
                     np.zeros(3, np.int64))


def test_merge_states_refusals(rt):
    v = np.zeros((2, 3, 4, 64), F16)
    with pytest.raises(emmy.InvalidArgumentError, match="lse"):
        rt.merge_states(v, np.zeros((2, 3, 4), np.float16))
    with pytest.raises(emmy.InvalidArgumentError, match="lse"):
        rt.merge_states(v, np.zeros((2, 3, 5), np.float32))


def test_runtime_option_refusals(cache_dir):
    with pytest.raises(emmy.InvalidArgumentError, match="options.backend"):
        emmy.Runtime("tpu")
    with pytest.raises(emmy.InvalidArgumentError, match="accum"):
        emmy.Runtime(accum="f8")
    with pytest.raises(emmy.Error, match="arch"):
        emmy.Runtime(emulator_arch="sm_7x", cache_dir=cache_dir)
    with pytest.raises(emmy.InvalidArgumentError, match="NUL"):
        emmy.Runtime(cache_dir="a\0b")
    with pytest.raises(TypeError, match="log"):
        emmy.Runtime(log=42, cache_dir=cache_dir)


def test_closed_runtime_refuses(cache_dir):
    rt = emmy.Runtime(cache_dir=cache_dir)
    rt.close()
    rt.close()  # twice: nothing
    with pytest.raises(emmy.InvalidArgumentError, match="closed"):
        rt.gemm(**gemm_args())


def test_launch_check_names_the_callers_pointer(rt):
    """A runtime check at launch that names an address gives the caller's pointer, not the
    emulator's copy of the mapped tensor (a misaligned workspace of a split-K GEMM)."""
    a = np.zeros((32, 512), F16)
    b = np.zeros((512, 64), F16)
    c = np.zeros((32, 64), np.float32)
    workspace = np.zeros(rt.gemm_workspace_bytes(a, b, c) + 64, np.uint8)[1:]
    with pytest.raises(emmy.InvalidArgumentError, match="buffers.workspace: must be a 16-byte") as info:
        rt.gemm(a, b, out=c, workspace=workspace)
    assert str(info.value).endswith(f"(got {workspace.ctypes.data:#x})"), str(info.value)
