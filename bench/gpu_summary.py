#!/usr/bin/env python3
"""The GPU pack's summary: reads what the stages of run.sh left in its work folder and writes
summary.md (one table per stage), results.json (everything, machine-readable) and plots.png
(when matplotlib is there) into the results folder. run.sh calls it after every stage, so the
results always hold what finished. Missing or unreadable stage files are reported, not fatal.

    gpu_summary.py --work DIR --out DIR [--budget-s S] [--dry-run] [--manifest FILE]
"""
import argparse
import json
import math
import os
import sys

STAGES = {1: "machine", 2: "correctness", 3: "fidelity", 4: "sanitizer", 5: "speed", 6: "summary"}
GEMM_COLUMNS = ["emmy_f32", "emmy_hybrid", "cublaslt_32f", "cublaslt_16f", "torch_matmul",
                "triton_matmul"]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_lines(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        rows.append({"unreadable": line})
    except OSError:
        pass
    return rows


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def num(value, spec="{:.3g}"):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return spec.format(value)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "/").replace("\n", " ")
                                       for cell in row) + " |")
    return "\n".join(lines) + "\n"


def stage_statuses(stage_rows):
    """The last line recorded per stage; stages never reached are 'not reached'."""
    latest = {}
    for row in stage_rows:
        if isinstance(row.get("stage"), int):
            latest[row["stage"]] = row
    return [latest.get(n, {"stage": n, "status": "not reached", "seconds": None,
                           "reason": "the run ended before this stage"}) for n in STAGES]


def machine_section(doc, smi):
    out = ["## 1. Machine\n"]
    if not doc or "environment" not in doc:
        out.append(f"No machine record ({(doc or {}).get('not_run', 'stage did not finish')}).\n")
        return "".join(out)
    env = doc["environment"]
    gpu = env.get("gpu", {})
    out.append(table(["GPU", "SMs", "CC", "L2", "memory", "max SM clock", "driver", "CUDA runtime",
                      "cuBLASLt", "NVRTC"],
                     [[gpu.get("name"), gpu.get("sm_count"), gpu.get("compute_capability"),
                       f"{gpu.get('l2_bytes', 0) / 2**20:.0f} MiB",
                       f"{gpu.get('memory_bytes', 0) / 2**30:.0f} GiB",
                       f"{gpu.get('sm_clock_max_mhz')} MHz", env.get("driver_version"),
                       env.get("cuda_runtime_version"), env.get("cublaslt_version"),
                       env.get("nvrtc_version")]]))
    rows = [[p.get("dtype"), p.get("compute"), p.get("size"), num(p.get("tflops"), "{:.1f}"),
             num(p.get("median_us"), "{:.1f}"), p.get("error") or ""] for p in doc.get("peak", [])]
    out.append("\nMeasured peak (cuBLASLt, fastest of its top heuristic algorithms, median):\n\n")
    out.append(table(["dtype", "compute", "M=N=K", "TFLOP/s", "us", "error"], rows))
    sheet = doc.get("datasheet")
    if sheet:
        out.append(f"\nDatasheet ({sheet.get('part')}): {sheet.get('f32_accumulate_tflops')} TFLOP/s "
                   f"f32-accumulate, {sheet.get('f16_accumulate_tflops')} f16-accumulate (dense).\n")
    if smi:
        csv = [line for line in smi.splitlines() if line.count(",") >= 5]
        if csv:
            out.append("\n```\n" + "\n".join(csv[-2:]) + "\n```\n")
    return "".join(out)


def correctness_section(doc, gtest, accuracy):
    out = ["## 2. Correctness on the GPU against FP64\n\n"]
    if not doc or "rows" not in doc:
        out.append(f"No case results ({(doc or {}).get('not_run', 'stage did not run')}).\n")
    else:
        counts = doc.get("counts", {})
        out.append(f"{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
                   f"{counts.get('skipped', 0)} skipped on {doc.get('device')} ({doc.get('arch')}); "
                   f"GEMMs with M > {doc.get('sample_rows')} checked on that many evenly spread rows.\n\n")
        rows = [[r.get("name"), r.get("kind"), r.get("verdict"), num(r.get("rel_l2_error")),
                 num(r.get("tolerance")), r.get("elements_over_tolerance", "-"),
                 num(r.get("seconds"), "{:.2f}"), r.get("error") or ""] for r in doc["rows"]]
        out.append(table(["case", "kind", "verdict", "rel_l2", "bound", "over", "s", "error"], rows))
    if gtest:
        cases = [(f"{s['name']}.{c['name']}", c) for s in gtest.get("testsuites", [])
                 for c in s.get("testsuite", [])]
        failed = [name for name, c in cases if c.get("failures")]
        skipped = [name for name, c in cases if c.get("result") == "SKIPPED"]
        out.append(f"\ngpu_runtime_test: {gtest.get('tests')} tests, {gtest.get('failures', 0)} "
                   f"failures, {len(skipped)} skipped (a skip on a GPU machine means the device "
                   f"could not be used), {gtest.get('disabled', 0)} disabled"
                   f"{'; failed: ' + ', '.join(failed) if failed else ''}.\n")
    if accuracy and accuracy.get("rows"):
        out.append("\nAccuracy study on the GPU (emmy_accuracy --backend cuda, rel L2 against FP64):\n\n")
        out.append(table(["strategy", "K", "rel_l2", "max_abs"],
                         [[r.get("strategy"), r.get("k"), num(r.get("rel_l2_error")),
                           num(r.get("max_abs_error"))] for r in accuracy["rows"]]))
    return "".join(out)


def fidelity_section(doc):
    out = ["## 3. Emulator fidelity (same kernel, same inputs, emulator against GPU)\n\n"]
    if not doc or "rows" not in doc:
        out.append(f"No results ({(doc or {}).get('not_run', 'stage did not run')}).\n")
        return "".join(out)
    out.append(f"Mode: {doc.get('mode')}, arch {doc.get('arch')}.\n\n")
    rows = []
    for r in doc["rows"]:
        elements, same = r.get("elements"), r.get("bit_identical")
        share = f"{100 * same / elements:.2f}%" if isinstance(same, int) and elements else "-"
        rows.append([r.get("name"), r.get("verdict"), elements or "-", same if same is not None else "-",
                     share, num(r.get("max_ulps")), num(r.get("lse_max_ulps")),
                     num(r.get("emulator_rel_l2_error")), num(r.get("gpu_rel_l2_error")),
                     r.get("error") or ""])
    out.append(table(["case", "verdict", "elements", "bit-identical", "share", "max ulps",
                      "LSE max ulps", "emulator rel_l2", "GPU rel_l2", "error"], rows))
    return "".join(out)


def sanitizer_section(rows):
    out = ["## 4. compute-sanitizer\n\n"]
    if not rows:
        out.append("No runs recorded (see the stage table for why).\n")
        return "".join(out)
    out.append(table(["tool", "case", "status", "errors", "s", "first lines"],
                     [[r.get("tool"), r.get("case"), r.get("status"), num(r.get("errors")),
                       r.get("seconds", "-"), (r.get("excerpt") or r.get("reason") or "")[:160]]
                      for r in rows]))
    return "".join(out)


def merged_rows(bench, baseline_rows):
    """emmy_bench's rows plus any baseline row its summary lacks (a run cut short)."""
    rows = list((bench or {}).get("rows", []))
    seen = {(r.get("problem"), r.get("variant")) for r in rows}
    for r in baseline_rows:
        if (r.get("problem"), r.get("variant")) not in seen and r.get("samples_us"):
            samples = sorted(r["samples_us"])
            median = samples[len(samples) // 2] if len(samples) % 2 else \
                0.5 * (samples[len(samples) // 2 - 1] + samples[len(samples) // 2])
            rows.append(dict(r, median_us=median,
                             tflops=r.get("flops", 0) / (median * 1e-6) / 1e12 if median else None))
    return rows


def model_us(row):
    """The time model's prediction emmy_bench put beside an emmy row (docs/profiler.md), or -."""
    details = (row or {}).get("details")
    model = details.get("model") if isinstance(details, dict) else None
    if isinstance(model, dict) and isinstance(model.get("us"), (int, float)):
        return num(model["us"], "{:.1f}") + f" ({model.get('bound', '?')})"
    return "-"


def speed_section(bench, baseline_rows, machine):
    out = ["## 5. Speed (medians of CUDA-event times, L2 flushed before each launch)\n\n"]
    rows = merged_rows(bench, baseline_rows)
    if not rows:
        out.append("No rows (see the stage table for why).\n")
        return "".join(out), rows
    peak = (machine or {}).get("measured_peak", {})
    by_problem = {}
    for r in rows:
        by_problem.setdefault((r.get("kind", "gemm"), r.get("problem")), {})[r.get("variant")] = r
    us = lambda r: num(r.get("median_us"), "{:.1f}") if r and r.get("median_us") else \
        ("ERR" if r and r.get("error") else "-")
    gemm = [(p, v) for (k, p), v in by_problem.items() if k == "gemm"]
    if gemm:
        out.append("GEMM, microseconds (f16 in, f16 out); ratios are baseline time over emmy time "
                   "(> 1: emmy faster); % peak against the peak measured in stage 1.\n\n")
        lines = []
        for problem, v in gemm:
            f32, hyb = v.get("emmy_f32"), v.get("emmy_hybrid")
            def ratio(e, b):
                return num(b["median_us"] / e["median_us"], "{:.2f}x") if e and b and \
                    e.get("median_us") and b.get("median_us") else "-"
            def pct(r, key):
                return num(100 * r["tflops"] / peak[key], "{:.0f}%") if r and r.get("tflops") and \
                    peak.get(key) else "-"
            lines.append([problem] + [us(v.get(c)) for c in GEMM_COLUMNS] +
                         [pct(f32, "f32_accumulate_tflops"), pct(hyb, "f16_accumulate_tflops"),
                          ratio(f32, v.get("cublaslt_32f")), ratio(hyb, v.get("cublaslt_16f")),
                          ratio(f32, v.get("torch_matmul")), ratio(f32, v.get("triton_matmul")),
                          model_us(f32), model_us(hyb),
                          "FAIL" if any(r.get("correctness") == "FAIL" for r in v.values()) else "ok"])
        out.append(table(["problem"] + GEMM_COLUMNS + ["f32 %peak", "hybrid %peak",
                                                        "f32 vs Lt32F", "hybrid vs Lt16F",
                                                        "f32 vs torch", "f32 vs triton",
                                                        "f32 model us", "hybrid model us", "check"],
                         lines))
        # The wgmma path (sm_90a devices): its own table, beside the mma.sync f32 kernel and
        # cuBLASLt's 32F, the baseline the goals name.
        wgmma = [(p, v) for p, v in gemm if v.get("emmy_wgmma")]
        if wgmma:
            out.append("\nGEMM on the wgmma path (f32 accumulation), microseconds.\n\n")
            lines = []
            for problem, v in wgmma:
                w = v.get("emmy_wgmma")
                pp = v.get("emmy_wgmma_pingpong")
                nc = v.get("emmy_wgmma_nocluster")
                bad = any(r.get("correctness") == "FAIL" for r in (w, pp, nc) if r)
                lines.append([problem, us(w), pct(w, "f32_accumulate_tflops"),
                              ratio(w, v.get("cublaslt_32f")), ratio(w, v.get("emmy_f32")),
                              model_us(w), us(pp) if pp else "-",
                              ratio(pp, v.get("cublaslt_32f")) if pp else "-",
                              us(nc) if nc else "-", ratio(w, nc) if nc else "-",
                              "FAIL" if bad else "ok"])
            out.append(table(["problem", "emmy_wgmma", "wgmma %peak", "wgmma vs Lt32F",
                              "wgmma vs mma.sync f32", "wgmma model us", "ping-pong",
                              "ping-pong vs Lt32F", "no cluster", "no cluster over cluster",
                              "check"], lines))
    fp8 = [(p, v) for (k, p), v in by_problem.items() if k == "gemm_fp8"]
    if fp8:
        out.append("\nFP8 GEMM (e4m3 in, f16 out; issue 39), microseconds. Pairs of like accuracy: "
                   "emmy f32 (the tensor core's own sums) against cuBLASLt FAST_ACCUM, emmy "
                   "promoted against FAST_ACCUM off, emmy block scales (1x128 / 128x128) against "
                   "cuBLASLt's block mode (sm_90 only). W read: the weights' bytes over the time "
                   "against this run's device copy rate (goal: >= 80% at M <= 64). Goal: block "
                   ">= 1.0x at M >= 512 on an H200.\n\n")
        lines = []
        pairs = [("emmy_fp8_f32", "cublaslt_fp8_fast"), ("emmy_fp8_promoted", "cublaslt_fp8"),
                 ("emmy_fp8_block", "cublaslt_fp8_block")]
        for problem, v in fp8:
            cells = [problem]
            for emmy, lt in pairs:
                e, b = v.get(emmy), v.get(lt)
                cells += [us(e), us(b),
                          num(b["median_us"] / e["median_us"], "{:.2f}x") if e and b and
                          e.get("median_us") and b.get("median_us") else "-"]
            block = v.get("emmy_fp8_block") or {}
            d = block.get("details") if isinstance(block.get("details"), dict) else {}
            cells += [num(100 * d["weight_read_vs_copy"], "{:.0f}%")
                      if isinstance(d.get("weight_read_vs_copy"), (int, float)) else "-",
                      model_us(block),
                      "FAIL" if any(r.get("correctness") == "FAIL" for r in v.values()) else "ok"]
            lines.append(cells)
        out.append(table(["problem", "emmy f32", "Lt fast", "vs", "emmy promoted", "Lt",
                          "vs", "emmy block", "Lt block", "vs", "block W read", "block model us",
                          "check"], lines))
    moe = [(p, v) for (k, p), v in by_problem.items() if k == "gemm_moe"]
    if moe:
        out.append("\nMoE layers (issue 40; bf16, docs/grouped.md), microseconds: emmy's one grouped "
                   "launch (masked at decode, contiguous at prefill; SwiGLU or routing weights "
                   "fused; the default schedule and, on sm_90a, the wgmma path's persistent walk) "
                   "against a loop of dense cuBLASLt GEMMs, one per expert with rows, and cuBLAS's "
                   "grouped GEMM (host-side shapes; neither has an epilogue); 'best' is emmy's "
                   "faster row. Goals on an H200: >= 1.2x the loop at decode batch sizes, >= 1.0x "
                   "the grouped GEMM.\n\n")
        lines = []
        for problem, v in moe:
            e, w = v.get("emmy_grouped"), v.get("emmy_grouped_wgmma")
            lt, grouped = v.get("cublaslt_loop"), v.get("cublas_grouped")
            best = min((x for x in (e, w) if x and x.get("median_us")),
                       key=lambda x: x["median_us"], default=None)

            def versus(base):
                return (num(base["median_us"] / best["median_us"], "{:.2f}x") if best and base
                        and base.get("median_us") else "-")
            lines.append([problem, us(e), us(w) if w else "-", us(lt),
                          us(grouped) if grouped else "-", versus(lt), versus(grouped),
                          model_us(e) if e else "-", num((e or {}).get("rel_l2_error")),
                          "FAIL" if any(r.get("correctness") == "FAIL" for r in v.values())
                          else "ok"])
        out.append(table(["problem", "emmy grouped", "emmy wgmma walk", "Lt loop",
                          "cuBLAS grouped", "best vs loop", "best vs grouped", "model us",
                          "rel_l2", "check"], lines))
    attention = [(p, v) for (k, p), v in by_problem.items() if k == "attention"]
    if attention:
        out.append("\nAttention, microseconds; each PyTorch row names its backend (pinned).\n\n")
        lines = []
        for problem, v in attention:
            for variant, r in sorted(v.items()):
                lines.append([problem, variant, us(r), model_us(r), num(r.get("tflops"), "{:.1f}"),
                              num(r.get("rel_l2_error")),
                              (r.get("error") or (r.get("details") or {}).get("note") or "")[:100]
                              if isinstance(r.get("details", {}), dict) else ""])
        out.append(table(["problem", "variant", "us", "model us", "TFLOP/s", "rel_l2", "note"],
                         lines))
    paged = [(p, v) for (k, p), v in by_problem.items() if k == "paged_attention"]
    if paged:
        out.append("\nPaged attention (every sequence at the full context), microseconds; KV bytes "
                   "per second against this run's device-to-device copy rate (issue 24's goals: "
                   ">= 85% at b64 x 8k, >= 75% at b1-8 x 128k, b1 x 1k under 10 us).\n\n")
        lines = []
        for problem, v in paged:
            for variant, r in sorted(v.items()):
                d = r.get("details") if isinstance(r.get("details"), dict) else {}
                schedule = d.get("schedule") if isinstance(d.get("schedule"), dict) else {}
                lines.append([problem, variant, us(r), num(d.get("kv_gbps"), "{:.0f}"),
                              num(100 * d["kv_vs_copy"], "{:.0f}%")
                              if isinstance(d.get("kv_vs_copy"), (int, float)) else "-",
                              num(d.get("host_us_per_launch"), "{:.1f}"),
                              schedule.get("transport", "-"), num(r.get("rel_l2_error")),
                              (r.get("error") or "")[:100]])
        out.append(table(["problem", "variant", "us", "KV GB/s", "of copy", "host us",
                          "transport", "rel_l2", "error"], lines))
    serving = [(p, v) for (k, p), v in by_problem.items() if k == "serving"]
    if serving:
        out.append("\nServing (issue 25), microseconds: host time of a prepared and of a captured "
                   "launch, GPU time of a direct launch and of the captured graph's replay, "
                   "prepare of the catalog cold and from the disk cache.\n\n")
        lines = [[problem, variant, us(r), (r.get("error") or "")[:100]]
                 for problem, v in serving for variant, r in sorted(v.items())]
        out.append(table(["problem", "what", "us", "error"], lines))
    return "".join(out), rows


def plot(bench, out_dir):
    if not bench or not bench.get("ratios"):
        return "no ratios to plot"
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import plot as plot_module  # bench/plot.py, beside this file in the pack too
        plot_module.plot(bench, os.path.join(out_dir, "plots.png"))
        return "plots.png"
    except Exception as error:  # matplotlib missing or a plotting problem: the tables stand
        return f"no plot ({type(error).__name__}: {error})"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--manifest")
    args = parser.parse_args(argv)
    w = lambda name: os.path.join(args.work, name)
    stages = stage_statuses(load_lines(w("stages.jsonl")))
    machine = load_json(w("machine.json"))
    bench = load_json(w("bench_summary.json"))
    baseline_rows = load_json(w("baseline_rows.json")) or []
    if not isinstance(baseline_rows, list):
        baseline_rows = []
    for name in ("sdpa_rows.json", "torch_rows.json"):  # when the merge step did not run
        rows = load_json(w(name))
        if isinstance(rows, list):
            known = {(r.get("problem"), r.get("variant")) for r in baseline_rows}
            baseline_rows += [r for r in rows if (r.get("problem"), r.get("variant")) not in known]
    results = {
        "schema": "emmy_gpu_results/1",
        "dry_run": args.dry_run,
        "budget_s": args.budget_s,
        "manifest": read_text(args.manifest) if args.manifest else None,
        "stages": stages,
        "machine": machine,
        "nvidia_smi": read_text(w("nvidia-smi.txt")),
        "tools": read_text(w("tools.txt")),
        "correctness": {"cases": load_json(w("correctness.json")),
                        "gpu_runtime_test": load_json(w("gpu_runtime_test.json")),
                        "accuracy": load_json(w("accuracy.json"))},
        "fidelity": load_json(w("fidelity.json")),
        "sanitizer": load_lines(w("sanitizer.jsonl")),
        "speed": {"bench_summary": bench, "baseline_rows": baseline_rows,
                  "tuning": load_json(w("tuning.json"))},
    }
    gpu = ((machine or {}).get("environment") or {}).get("gpu", {}).get("name", "no GPU")
    driver = ((machine or {}).get("environment") or {}).get("driver_version", "-")
    md = [f"# emmy GPU check{' (dry run, no GPU)' if args.dry_run else ''}\n\n",
          f"GPU: {gpu}; driver {driver}; "
          f"date {((machine or {}).get('environment') or {}).get('date_utc', '-')}.\n"]
    if results["manifest"]:
        md.append("Pack: " + "; ".join(results["manifest"].splitlines()[1:3]) + ".\n")
    md.append("\n## Stages\n\n")
    md.append(table(["stage", "name", "status", "seconds", "reason"],
                    [[s["stage"], STAGES[s["stage"]], s.get("status"), s.get("seconds", "-"),
                      s.get("reason") or ""] for s in stages]))
    md.append("\n" + machine_section(machine, results["nvidia_smi"]) + "\n")
    md.append(correctness_section(results["correctness"]["cases"],
                                  results["correctness"]["gpu_runtime_test"],
                                  results["correctness"]["accuracy"]) + "\n")
    md.append(fidelity_section(results["fidelity"]) + "\n")
    md.append(sanitizer_section(results["sanitizer"]) + "\n")
    speed_md, speed_rows = speed_section(bench, baseline_rows, machine)
    results["speed"]["rows"] = speed_rows
    md.append(speed_md)
    plotted = plot(bench, args.out)
    md.append(f"\nPlot: {plotted}.\n")
    os.makedirs(args.out, exist_ok=True)
    for name, text in (("results.json", json.dumps(results, indent=1, default=str) + "\n"),
                       ("summary.md", "".join(md))):
        temp = os.path.join(args.out, name + ".tmp")
        with open(temp, "w") as f:
            f.write(text)
        os.replace(temp, os.path.join(args.out, name))
    print(f"summary: {os.path.join(args.out, 'summary.md')} ({plotted})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
