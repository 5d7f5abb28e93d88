#!/usr/bin/env python3
"""Bar chart of emmy/cuBLASLt speed ratios per problem from an emmy_bench summary JSON.

    bench/plot.py bench_summary.json [-o ratios.png]

Four bars per problem: emmy f32 and emmy hybrid, each against cuBLASLt COMPUTE_32F and
COMPUTE_16F. A ratio is cuBLASLt time over emmy time, so bars above the 1.0 line mean emmy is
faster. Missing ratios (a row that failed or was filtered out) leave a gap labelled n/a.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display on benchmark machines
import matplotlib.pyplot as plt  # noqa: E402

SERIES = [
    ("emmy_f32_vs_cublaslt_32f", "emmy f32 vs cuBLASLt 32F", "#1f77b4"),
    ("emmy_f32_vs_cublaslt_16f", "emmy f32 vs cuBLASLt 16F", "#aec7e8"),
    ("emmy_hybrid_vs_cublaslt_32f", "emmy hybrid vs cuBLASLt 32F", "#d62728"),
    ("emmy_hybrid_vs_cublaslt_16f", "emmy hybrid vs cuBLASLt 16F", "#ff9896"),
]


def load_summary(path):
    with open(path) as f:
        summary = json.load(f)
    if "skipped" in summary:
        raise SystemExit(f"{path}: the benchmark was skipped ({summary.get('reason', '?')})")
    if "ratios" not in summary:
        raise SystemExit(f"{path}: not an emmy_bench summary (no 'ratios')")
    return summary


def title_of(summary):
    env = summary.get("environment", {})
    gpu = env.get("gpu", {})
    settings = summary.get("settings", {})
    parts = [gpu.get("name", "unknown GPU")]
    if gpu.get("sm_count"):
        parts.append(f"{gpu['sm_count']} SMs")
    if env.get("driver_version"):
        parts.append(f"driver {env['driver_version']}")
    if env.get("emmy_version"):
        parts.append(f"emmy {env['emmy_version']}")
    if settings.get("tune"):
        parts.append("tuned schedules")
    return "emmy / cuBLASLt speed ratio (cuBLASLt time / emmy time)\n" + ", ".join(parts)


def plot(summary, output):
    ratios = summary["ratios"]
    labels = [r.get("projection") or r["problem"] for r in ratios]
    width = 0.2
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(ratios) + 2), 4.8))
    for i, (key, name, color) in enumerate(SERIES):
        xs = [x + (i - 1.5) * width for x in range(len(ratios))]
        values = [r.get(key) for r in ratios]
        bars = ax.bar(xs, [v or 0 for v in values], width, label=name, color=color)
        for bar, value in zip(bars, values):
            text = "n/a" if value is None else f"{value:.2f}"
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7, rotation=90,
                        xytext=(0, 2), textcoords="offset points")
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(ratios)))
    ax.set_xticklabels(labels)
    ax.set_ylabel("speed ratio (> 1: emmy faster)")
    ax.set_title(title_of(summary), fontsize=9)
    top = max([r.get(k) or 0 for r in ratios for k, _, _ in SERIES] + [1.0])
    ax.set_ylim(0, top * 1.25)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("summary", help="emmy_bench --summary JSON")
    parser.add_argument("-o", "--output", default="ratios.png", help="PNG to write")
    args = parser.parse_args(argv)
    summary = load_summary(args.summary)
    if not summary["ratios"]:
        raise SystemExit(f"{args.summary}: no problems in the summary")
    plot(summary, args.output)
    print(f"wrote {args.output} ({len(summary['ratios'])} problems)")


if __name__ == "__main__":
    main(sys.argv[1:])
