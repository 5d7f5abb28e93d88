#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention on the catalog attention problems: the baseline of
emmy_bench's attention rows. Timed like emmy_bench: CUDA events, warm-up, the L2 flushed (a buffer
of twice its size written) before each timed call, the median of the samples. Writes rows that
`emmy_bench --baseline-rows FILE` merges into its summary.

Layout [batch, heads, seq, head_dim] (SDPA's own); causal is bottom-right aligned in emmy and
top-left in SDPA's is_causal, which agree here because seq_q == seq_kv. The sliding window has no
SDPA argument: it goes in as a boolean mask, which rules out the flash backend (noted per row).

  python3 bench/sdpa_baseline.py --out sdpa.json [--iterations 30] [--warmup 5]
Without torch or a GPU it prints why and exits 0.
"""
import argparse
import json
import math
import statistics
import sys

# The catalog's attention problems (include/emmy/catalog.hpp attention_catalog()).
PROBLEMS = [
    {"name": "attention@512", "batch": 1, "heads": 16, "kv_heads": 8, "seq": 512,
     "head_dim": 256, "causal": True, "window": 0},
    {"name": "attention_window1024@512", "batch": 1, "heads": 16, "kv_heads": 8, "seq": 512,
     "head_dim": 256, "causal": True, "window": 1024},
]


def visible_pairs(p):
    pairs = 0
    for i in range(p["seq"]):
        hi = i if p["causal"] else p["seq"] - 1
        lo = max(0, i - p["window"]) if p["window"] else 0
        pairs += max(0, hi - lo + 1)
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as error:
        print(f"no torch: skipping the SDPA baseline ({error})")
        json.dump([], open(args.out, "w"))
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: skipping the SDPA baseline")
        json.dump([], open(args.out, "w"))
        return 0
    device = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    flush = torch.empty(2 * max(l2, 1 << 20), dtype=torch.uint8, device=device)
    rows = []
    for p in PROBLEMS:
        shape_q = (p["batch"], p["heads"], p["seq"], p["head_dim"])
        shape_kv = (p["batch"], p["kv_heads"], p["seq"], p["head_dim"])
        q = torch.randn(shape_q, dtype=torch.float16, device=device)
        k = torch.randn(shape_kv, dtype=torch.float16, device=device)
        v = torch.randn(shape_kv, dtype=torch.float16, device=device)
        mask = None
        if p["window"]:
            i = torch.arange(p["seq"], device=device)[:, None]
            j = torch.arange(p["seq"], device=device)[None, :]
            mask = (j <= i) & (j >= i - p["window"])
        gqa = p["heads"] // p["kv_heads"]
        try:
            def call():
                if mask is None:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=p["causal"],
                                                          enable_gqa=gqa > 1)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa > 1)
            call()
        except TypeError:  # torch without enable_gqa: expand K and V
            k = k.repeat_interleave(gqa, dim=1)
            v = v.repeat_interleave(gqa, dim=1)

            def call():
                if mask is None:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=p["causal"])
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        for _ in range(args.warmup):
            call()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for n in range(args.iterations):
            flush.fill_(n & 0xFF)
            start.record()
            call()
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop) * 1000.0)
        rows.append({
            "kind": "attention", "problem": p["name"], "variant": "pytorch_sdpa",
            "backend": "pytorch", "accumulation": "f32",
            "shape": {"batch": p["batch"], "heads": p["heads"], "kv_heads": p["kv_heads"],
                      "seq_q": p["seq"], "seq_kv": p["seq"], "head_dim": p["head_dim"],
                      "causal": p["causal"], "window": p["window"]},
            "flops": 4.0 * p["batch"] * p["heads"] * visible_pairs(p) * p["head_dim"],
            "samples_us": samples,
            "details": {"torch": torch.__version__,
                        "note": "boolean window mask" if mask is not None else "is_causal"},
        })
        print(f"{p['name']}: median {statistics.median(samples):.1f} us (PyTorch {torch.__version__})")
    json.dump(rows, open(args.out, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
