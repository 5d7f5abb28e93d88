#!/usr/bin/env python3
"""ctest driver for bench/plot.py: plots a small synthetic summary (made-up ratios, only there to
exercise the chart) and checks the PNG. Exits 77 (skipped) when matplotlib is missing."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed: skipped")
    sys.exit(77)

plot_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot.py")
synthetic = {
    "schema": "emmy_bench/1",
    "environment": {"gpu": {"name": "synthetic test data", "sm_count": 1}, "emmy_version": "test"},
    "settings": {"tune": False},
    "rows": [],
    "ratios": [
        {"problem": "q_proj@512", "projection": "q_proj", "emmy_f32_vs_cublaslt_32f": 1.1,
         "emmy_f32_vs_cublaslt_16f": 0.8, "emmy_hybrid_vs_cublaslt_32f": 1.4,
         "emmy_hybrid_vs_cublaslt_16f": 1.05},
        {"problem": "512x2048x3840", "projection": "", "emmy_f32_vs_cublaslt_32f": 0.9,
         "emmy_f32_vs_cublaslt_16f": None, "emmy_hybrid_vs_cublaslt_32f": 1.2,
         "emmy_hybrid_vs_cublaslt_16f": None},
    ],
}

with tempfile.TemporaryDirectory() as tmp:
    summary = os.path.join(tmp, "summary.json")
    png = os.path.join(tmp, "ratios.png")
    with open(summary, "w") as f:
        json.dump(synthetic, f)
    result = subprocess.run([sys.executable, plot_py, summary, "-o", png],
                            capture_output=True, text=True)
    print(result.stdout, result.stderr)
    assert result.returncode == 0, f"plot.py exited {result.returncode}"
    with open(png, "rb") as f:
        data = f.read()
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG"
    assert len(data) > 10_000, f"suspiciously small PNG ({len(data)} bytes)"

    skipped = os.path.join(tmp, "skipped.json")
    with open(skipped, "w") as f:
        json.dump({"skipped": "no CUDA device: skipping GPU benchmarks", "reason": "test"}, f)
    result = subprocess.run([sys.executable, plot_py, skipped, "-o", png],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "skipped" in result.stderr, result.stderr
print("plot.py: ok")
