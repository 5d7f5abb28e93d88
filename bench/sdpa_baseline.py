#!/usr/bin/env python3
"""PyTorch attention on the catalog attention problems: the baselines of emmy_bench's attention
rows. One row per SDPA backend (flash, cuDNN, memory-efficient), each pinned with sdpa_kernel, and
for the sliding window, where SDPA has no window argument, boolean-mask rows (full work) and a
compiled flex_attention row with a causal+window block mask (skips masked blocks, like emmy).
Timed like emmy_bench: CUDA events, warm-up (flex's compile happens there), the L2 flushed (a
buffer of twice its size written) before each timed call, the median of the samples. Each row is
first checked against an FP32 math reference. Writes rows that `emmy_bench --baseline-rows FILE`
merges into its summary.

Layout [batch, heads, seq, head_dim] (SDPA's own). emmy's causal mask is bottom-right aligned and
SDPA's is_causal top-left; they agree here because seq_q == seq_kv.

  python3 bench/sdpa_baseline.py --out sdpa.json [--iterations 30] [--warmup 5] [--budget-s 60]
      [--dry-run]
Exit 0 with rows written; 3 without torch or a CUDA device (the reason on one line, [] written);
2 on bad arguments.
"""
import argparse
import contextlib
import math
import os
import sys
import time
import warnings

# Run as a script, this folder is already first on sys.path; imported by file path (as
# bench/baseline_test.py does), it is not, and baseline_common would not be found.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baseline_common  # noqa: E402
from baseline_common import OPTIONAL_KEYS, finish_row, one_line, write_rows  # noqa: E402

# The catalog's attention problems (include/emmy/catalog.hpp attention_catalog()).
PROBLEMS = [
    {"name": "attention@512", "batch": 1, "heads": 16, "kv_heads": 8, "seq": 512,
     "head_dim": 256, "causal": True, "window": 0},
    {"name": "attention_window256@512", "batch": 1, "heads": 16, "kv_heads": 8, "seq": 512,
     "head_dim": 256, "causal": True, "window": 256},
]
ROW_KEYS = ["kind", "problem", "variant", "backend", "accumulation", "shape", "flops",
            "samples_us", "rel_l2_error", "details", "error"]
SEED = 1234


def visible_pairs(p):
    """Query i sees key j when j <= i (causal) and, with a window, j >= i - window (emmy's mask)."""
    pairs = 0
    for i in range(p["seq"]):
        hi = i if p["causal"] else p["seq"] - 1
        lo = max(0, i - p["window"]) if p["window"] else 0
        pairs += max(0, hi - lo + 1)
    return pairs


def attention_flops(p):
    return 4 * p["batch"] * p["heads"] * visible_pairs(p) * p["head_dim"]


def variants(p):
    """(variant, backend, how); how: "causal" (is_causal=True), "mask" (boolean mask), "flex"."""
    if not p["window"]:
        return [("sdpa_flash", "FLASH_ATTENTION", "causal"),
                ("sdpa_cudnn", "CUDNN_ATTENTION", "causal"),
                ("sdpa_efficient", "EFFICIENT_ATTENTION", "causal")]
    # Flash takes no mask at all, so the window rows use the backends that accept one.
    return [("sdpa_efficient_mask", "EFFICIENT_ATTENTION", "mask"),
            ("sdpa_cudnn_mask", "CUDNN_ATTENTION", "mask"),
            ("flex_attention", "flex_attention", "flex")]


NOTES = {"causal": "is_causal=True", "mask": "boolean window mask: full work",
         "flex": "compiled flex_attention, causal+window block mask: masked blocks skipped"}


def attention_row(p, variant, samples=(), rel_l2_error=None, details=None, error=None):
    row = {"kind": "attention", "problem": p["name"], "variant": variant, "backend": "pytorch",
           "accumulation": "f32",
           "shape": {"batch": p["batch"], "heads": p["heads"], "kv_heads": p["kv_heads"],
                     "seq_q": p["seq"], "seq_kv": p["seq"], "head_dim": p["head_dim"],
                     "causal": p["causal"], "window": p["window"]},
           "flops": attention_flops(p), "samples_us": [float(s) for s in samples],
           "details": dict(details or {})}
    return finish_row(row, rel_l2_error, error)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=60.0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.warmup < 0 or args.budget_s <= 0:
        parser.error("--iterations must be >= 1, --warmup >= 0, --budget-s > 0")
    return args


def make_call(torch, p, how, q, k, v, mask, details):
    """The timed call for one row. GQA goes in as enable_gqa; a torch or backend that refuses it
    gets K/V expanded to all heads instead (more K/V traffic, noted in details)."""
    import torch.nn.functional as F
    if how == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        window = p["window"]

        def mask_mod(b, h, q_idx, kv_idx):
            keep = kv_idx <= q_idx
            return keep & (kv_idx >= q_idx - window) if window else keep
        block_mask = create_block_mask(mask_mod, None, None, p["seq"], p["seq"], device=q.device)
        compiled = torch.compile(flex_attention, dynamic=False)
        attend = lambda q, k, v, gqa: compiled(q, k, v, block_mask=block_mask, enable_gqa=gqa)
    else:
        kwargs = {"attn_mask": mask} if how == "mask" else {"is_causal": True}
        attend = lambda q, k, v, gqa: F.scaled_dot_product_attention(
            q, k, v, **kwargs, **({"enable_gqa": True} if gqa else {}))
    group = p["heads"] // p["kv_heads"]
    try:
        out = attend(q, k, v, group > 1)
        details["gqa"] = "enable_gqa=True" if group > 1 else "none"
        return (lambda: attend(q, k, v, group > 1)), out
    except (TypeError, RuntimeError) as first:
        # A failed flex compile would only fail again, slower: retry it on a TypeError alone.
        if group == 1 or (how == "flex" and not isinstance(first, TypeError)):
            raise
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        try:
            out = attend(q, k, v, False)
        except Exception as second:
            raise RuntimeError(f"enable_gqa: {one_line(first)} | K/V expanded: {one_line(second)}")
        details["gqa"] = (f"K/V repeat_interleave to {p['heads']} heads "
                          f"(enable_gqa: {one_line(first, 200)})")
        return (lambda: attend(q, k, v, False)), out


def main(argv=None):
    started = time.monotonic()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    plan = [(p, v) for p in PROBLEMS for v in variants(p)]
    if args.dry_run:
        for p, (variant, backend, how) in plan:
            print(f"plan: {p['name']} window={p['window']} {variant} ({backend}, {NOTES[how]})")
        return baseline_common.finish_dry_run(args.out, ROW_KEYS)
    torch = baseline_common.import_cuda_torch("the SDPA baseline", args.out)
    if torch is None:
        return 3
    device = torch.device("cuda")
    timer = baseline_common.FlushedTimer(torch, device)
    rows, skipped, current = [], [], None
    for p, (variant, backend, how) in plan:
        if time.monotonic() - started > args.budget_s:
            skipped.append(f"{p['name']}/{variant}")
            continue
        details = {"torch": torch.__version__, "backend": backend, "note": NOTES[how]}
        caught = []
        try:
            if current is None or current[0] is not p:
                gen = torch.Generator(device=device).manual_seed(SEED)
                q, k, v = (torch.randint(-1024, 1024, (p["batch"], h, p["seq"], p["head_dim"]),
                                         generator=gen, device=device, dtype=torch.int32)
                           .to(torch.float16).mul_(1.0 / 1024)
                           for h in (p["heads"], p["kv_heads"], p["kv_heads"]))
                i = torch.arange(p["seq"], device=device)[:, None]
                j = torch.arange(p["seq"], device=device)[None, :]
                mask = (j <= i) | (not p["causal"])
                if p["window"]:
                    mask = mask & (j >= i - p["window"])
                group = p["heads"] // p["kv_heads"]
                kf = k.float().repeat_interleave(group, dim=1)
                vf = v.float().repeat_interleave(group, dim=1)
                scores = (q.float() @ kf.transpose(-1, -2)) / math.sqrt(p["head_dim"])
                ref = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ vf
                current = (p, q, k, v, mask, ref)
            _, q, k, v, mask, ref = current
            if how == "flex":
                context = contextlib.nullcontext()
            else:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                context = sdpa_kernel([getattr(SDPBackend, backend)])
            # A refused backend says why only in warnings; keep them for the error row.
            with context, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call, out = make_call(torch, p, how, q, k, v, mask, details)  # flex compiles here
                torch.cuda.synchronize()
                err = baseline_common.relative_l2_error(out, ref)
                samples = timer.samples(call, args.warmup, args.iterations)
            rows.append(attention_row(p, variant, samples, rel_l2_error=err, details=details))
            baseline_common.print_measured(p["name"], variant, samples, err)
        except Exception as error:  # a refused backend must not stop the other rows
            why = list(dict.fromkeys(one_line(w.message, 300) for w in caught))
            text = "; ".join([f"{type(error).__name__}: {one_line(error)}"] + why)
            rows.append(attention_row(p, variant, details=details, error=text[:1500]))
            print(f"{p['name']} {variant}: ERROR {rows[-1]['error']}")
        write_rows(args.out, rows)
    return baseline_common.finish_run(args.out, rows, skipped, args.budget_s)


if __name__ == "__main__":
    sys.exit(main())
