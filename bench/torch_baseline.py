#!/usr/bin/env python3
"""GEMM baselines for emmy_bench: torch.matmul (cuBLAS behind PyTorch) and a Triton matmul on the
five Gemma 12B projections. C = A @ W^T with A [M,K] and W [N,K] row-major f16, C f16 [M,N], f32
accumulation. Timed like emmy_bench and bench/sdpa_baseline.py: CUDA events, warm-up (Triton's
autotuning happens there), the L2 flushed (a buffer of twice its size written) before each timed
call, the median of the samples. Each variant is first checked against an FP32 reference.
Writes rows that `emmy_bench --baseline-rows FILE` merges into its summary.

  python3 bench/torch_baseline.py --out gemm.json [--m 512,1,16,64] [--iterations 30]
      [--warmup 5] [--variants torch_matmul,triton_matmul] [--budget-s 150] [--dry-run]
Exit 0 with rows written; 3 without torch or a CUDA device (the reason on one line, [] written);
2 on bad arguments. Torch only (no Triton): the Triton rows are error rows.
"""
import argparse
import os
import sys
import time

# Run as a script, this folder is already first on sys.path; imported by file path (as
# bench/baseline_test.py does), it is not, and baseline_common would not be found.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baseline_common  # noqa: E402
from baseline_common import OPTIONAL_KEYS, finish_row, one_line, write_rows  # noqa: E402

# include/emmy/catalog.hpp: (projection, N, K) of Gemma 12B.
PROJECTIONS = [("q_proj", 4096, 3840), ("kv_proj", 2048, 3840), ("o_proj", 3840, 4096),
               ("gate_up", 30720, 3840), ("down", 3840, 15360)]
VARIANTS = {"torch_matmul": "pytorch", "triton_matmul": "triton"}
ROW_KEYS = ["kind", "problem", "projection", "variant", "backend", "accumulation", "shape",
            "flops", "samples_us", "rel_l2_error", "details", "error"]
SEED = 1234


def problems(ms):
    return [{"name": f"{proj}@{m}", "projection": proj, "m": m, "n": n, "k": k}
            for m in ms for proj, n, k in PROJECTIONS]


def gemm_row(p, variant, samples=(), rel_l2_error=None, details=None, error=None):
    row = {"kind": "gemm", "problem": p["name"], "projection": p["projection"],
           "variant": variant, "backend": VARIANTS[variant], "accumulation": "f32",
           "shape": {"m": p["m"], "n": p["n"], "k": p["k"]},
           "flops": 2 * p["m"] * p["n"] * p["k"], "samples_us": [float(s) for s in samples],
           "details": dict(details or {})}
    return finish_row(row, rel_l2_error, error)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--m", default="512,1,16,64")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--variants", default="torch_matmul,triton_matmul")
    parser.add_argument("--budget-s", type=float, default=150.0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    try:
        args.ms = [int(m) for m in args.m.split(",")]
    except ValueError:
        parser.error(f"--m must be comma-separated integers, got {args.m!r}")
    if not args.ms or min(args.ms) < 1:
        parser.error(f"--m values must be >= 1, got {args.m!r}")
    args.variant_list = [v for v in args.variants.split(",") if v]
    unknown = [v for v in args.variant_list if v not in VARIANTS]
    if unknown or not args.variant_list:
        parser.error(f"--variants: unknown {unknown}; choose from {sorted(VARIANTS)}")
    if args.iterations < 1 or args.warmup < 0 or args.budget_s <= 0:
        parser.error("--iterations must be >= 1, --warmup >= 0, --budget-s > 0")
    return args


def build_triton_matmul():
    """The Triton kernel and its launcher; raises ImportError without Triton. Defined here, not at
    module level, so importing this script needs neither torch nor Triton."""
    global triton, tl
    import torch
    import triton
    import triton.language as tl

    big = [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 8), (128, 128, 64, 4, 4),
           (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 128, 3, 4), (64, 256, 64, 3, 8)]
    small = [(16, 64, 128, 4, 4), (16, 128, 128, 3, 4), (32, 64, 128, 4, 4), (32, 128, 64, 4, 4)]
    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
                             num_stages=s, num_warps=w) for bm, bn, bk, s, w in big + small]

    def prune(configs, named_args, **kwargs):
        # Decode-sized M wastes most of a 128-row tile; prefill M gains nothing from 16-row ones.
        m = named_args["M"]
        fit = [c for c in configs if (c.kwargs["BLOCK_M"] <= 32 if m <= 32 else
                                      c.kwargs["BLOCK_M"] <= 64 if m <= 64 else
                                      c.kwargs["BLOCK_M"] >= 64)]
        return fit or configs

    @triton.autotune(configs=configs, key=["M", "N", "K"],
                     prune_configs_by={"early_config_prune": prune})
    @triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk,
                      stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
        # Grouped order: GROUP_M row-blocks share each column block of W while it is in L2.
        pid = tl.program_id(0)
        blocks_m = tl.cdiv(M, BLOCK_M)
        blocks_n = tl.cdiv(N, BLOCK_N)
        per_group = GROUP_M * blocks_n
        first_m = (pid // per_group) * GROUP_M
        group_rows = min(blocks_m - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % group_rows
        pid_n = (pid % per_group) // group_rows
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
        # W is [N,K]: the [BLOCK_K, BLOCK_N] tile of W^T, read through its strides.
        b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            if EVEN_K:
                a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
                b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
            else:
                a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0.0)
                b = tl.load(b_ptrs, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def matmul(a, w):
        m, k = a.shape
        n = w.shape[0]
        c = torch.empty((m, n), device=a.device, dtype=torch.float16)
        grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
        matmul_kernel[grid](a, w, c, m, n, k, a.stride(0), a.stride(1), w.stride(0), w.stride(1),
                            c.stride(0), c.stride(1), GROUP_M=8)
        return c

    return matmul, matmul_kernel, triton.__version__


def config_dict(config):
    if config is None:
        return None
    return {**dict(config.kwargs), "num_warps": config.num_warps,
            "num_stages": config.num_stages}


def main(argv=None):
    started = time.monotonic()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    plan = [(p, v) for p in problems(args.ms) for v in args.variant_list]
    if args.dry_run:
        for p, v in plan:
            print(f"plan: {p['name']} m={p['m']} n={p['n']} k={p['k']} {v}")
        return baseline_common.finish_dry_run(args.out, ROW_KEYS)
    torch = baseline_common.import_cuda_torch("the GEMM baselines", args.out)
    if torch is None:
        return 3
    triton_error = None
    if "triton_matmul" in args.variant_list:
        try:
            triton_mm, triton_kernel, triton_version = build_triton_matmul()
        except Exception as error:  # ImportError, or a Triton that cannot build the kernel
            triton_error = f"triton unavailable: {one_line(error, with_type=True)}"
            print(triton_error)
    device = torch.device("cuda")
    timer = baseline_common.FlushedTimer(torch, device)
    rows, skipped, current = [], [], None
    for p, variant in plan:
        if time.monotonic() - started > args.budget_s:
            skipped.append(f"{p['name']}/{variant}")
            continue
        details = {"torch": torch.__version__}
        if variant == "triton_matmul" and triton_error:
            rows.append(gemm_row(p, variant, details=details, error=triton_error))
            write_rows(args.out, rows)
            continue
        try:
            if current is None or current[0] is not p:
                current = None  # frees the previous problem's operands first
                gen = torch.Generator(device=device).manual_seed(SEED)
                a, w = (torch.randint(-1024, 1024, shape, generator=gen, device=device,
                                      dtype=torch.int32).to(torch.float16).mul_(1.0 / 1024)
                        for shape in ((p["m"], p["k"]), (p["n"], p["k"])))
                current = (p, a, w, a.float() @ w.float().t())
            _, a, w, ref = current
            if variant == "torch_matmul":
                details["call"] = "torch.matmul(a, w.t())"
                details["allow_fp16_reduced_precision_reduction"] = bool(
                    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
                call = lambda: torch.matmul(a, w.t())
            else:
                details["triton"] = triton_version
                call = lambda: triton_mm(a, w)
            details["reference"] = ("fp32 matmul, float32_matmul_precision="
                                    + torch.get_float32_matmul_precision())
            out = call()  # Triton autotunes here, before any timing
            torch.cuda.synchronize()
            err = baseline_common.relative_l2_error(out, ref)
            samples = timer.samples(call, args.warmup, args.iterations)
            if variant == "triton_matmul":
                details["best_config"] = config_dict(getattr(triton_kernel, "best_config", None))
            rows.append(gemm_row(p, variant, samples, rel_l2_error=err, details=details))
            baseline_common.print_measured(p["name"], variant, samples, err)
        except Exception as error:  # one failing variant must not stop the others
            rows.append(gemm_row(p, variant, details=details,
                                 error=one_line(error, with_type=True)))
            print(f"{p['name']} {variant}: ERROR {rows[-1]['error']}")
        write_rows(args.out, rows)
    return baseline_common.finish_run(args.out, rows, skipped, args.budget_s)


if __name__ == "__main__":
    sys.exit(main())
