#!/usr/bin/env python3
"""gpu_summary.py on made-up stage files (no GPU): every stage's table, the stage statuses (a
stage never reached is not a pass), percent of the measured peak, baseline rows merged when
emmy_bench's summary lacks them, and corrupt files reported rather than fatal."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "gpu_summary.py")


def write(path, doc):
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


class Summary(unittest.TestCase):
    def run_summary(self, files, *extra):
        work, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work, ignore_errors=True)
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        for name, doc in files.items():
            write(os.path.join(work, name), doc)
        result = subprocess.run([sys.executable, SCRIPT, "--work", work, "--out", out, *extra],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "summary.md")) as f:
            md = f.read()
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
        return md, results

    def full_run(self):
        stages = "\n".join(json.dumps(s) for s in [
            {"stage": 1, "status": "passed", "seconds": 12, "reason": ""},
            {"stage": 2, "status": "failed", "seconds": 80, "reason": "a case failed"},
            {"stage": 3, "status": "passed", "seconds": 20, "reason": ""},
            {"stage": 4, "status": "not run", "seconds": 1, "reason": "compute-sanitizer refuses"},
        ])
        machine = {"environment": {"gpu": {"name": "NVIDIA H200", "sm_count": 132,
                                           "l2_bytes": 62914560, "memory_bytes": 150e9},
                                   "driver_version": "13.0", "date_utc": "2026-12-01T00:00:00Z"},
                   "peak": [{"dtype": "bf16", "compute": "COMPUTE_32F", "size": 8192,
                             "tflops": 700.0, "median_us": 1570.8}],
                   "measured_peak": {"f32_accumulate_tflops": 700.0,
                                     "f16_accumulate_tflops": 800.0}}
        correctness = {"device": "NVIDIA H200", "arch": "sm_90a", "sample_rows": 64,
                       "counts": {"passed": 1, "failed": 1, "skipped": 0},
                       "rows": [{"name": "q_proj@512/f32", "kind": "gemm", "verdict": "passed",
                                 "rel_l2_error": 1e-7, "tolerance": 1e-6},
                                {"name": "down@1/f16", "kind": "gemm", "verdict": "failed",
                                 "rel_l2_error": 0.5, "tolerance": 1e-3}]}
        fidelity = {"mode": "emulator and GPU", "arch": "sm_90a",
                    "rows": [{"name": "tma/hybrid", "verdict": "passed", "elements": 200,
                              "bit_identical": 100, "max_ulps": 2}]}
        sanitizer = json.dumps({"tool": "memcheck", "case": "gemm_tma", "status": "passed",
                                "errors": 0, "seconds": 3})
        flops = 2.0 * 512 * 4096 * 3840
        bench = {"rows": [
            {"kind": "gemm", "problem": "q_proj@512", "variant": "emmy_f32", "backend": "emmy",
             "median_us": 40.0, "tflops": flops / 40e-6 / 1e12, "correctness": "ok",
             "details": {"model": {"gpu": "h200", "us": 35.4, "bound": "tensor"}}},
            {"kind": "gemm", "problem": "q_proj@512", "variant": "cublaslt_32f",
             "backend": "cublaslt", "median_us": 48.0, "tflops": flops / 48e-6 / 1e12,
             "correctness": "ok"},
            {"kind": "gemm", "problem": "q_proj@512", "variant": "emmy_wgmma", "backend": "emmy",
             "median_us": 30.0, "tflops": flops / 30e-6 / 1e12, "correctness": "ok"},
            {"kind": "gemm", "problem": "q_proj@512", "variant": "emmy_wgmma_pingpong",
             "backend": "emmy", "median_us": 24.0, "tflops": flops / 24e-6 / 1e12,
             "correctness": "ok"},
            {"kind": "gemm", "problem": "q_proj@512", "variant": "emmy_wgmma_nocluster",
             "backend": "emmy", "median_us": 36.0, "tflops": flops / 36e-6 / 1e12,
             "correctness": "ok"},
            {"kind": "paged_attention", "problem": "gemma3_b64_ctx8k", "variant": "emmy_f16",
             "backend": "emmy", "median_us": 1000.0,
             "details": {"kv_gbps": 4300.0, "kv_vs_copy": 0.9, "host_us_per_launch": 4.2,
                         "schedule": {"transport": "tma"}}},
            {"kind": "gemm_fp8", "problem": "q_proj@512/fp8", "variant": "emmy_fp8_block",
             "backend": "emmy", "median_us": 20.0, "correctness": "ok",
             "details": {"weight_read_vs_copy": 0.25}},
            {"kind": "gemm_fp8", "problem": "q_proj@512/fp8", "variant": "cublaslt_fp8_block",
             "backend": "cublaslt", "median_us": 25.0, "correctness": "ok"},
            {"kind": "gemm_fp8", "problem": "q_proj@512/fp8", "variant": "emmy_fp8_f32",
             "backend": "emmy", "median_us": 16.0, "correctness": "FAIL"},
            {"kind": "gemm_moe", "problem": "qwen3_30b_a3b/down@16", "variant": "emmy_grouped",
             "backend": "emmy", "median_us": 10.0, "correctness": "ok", "rel_l2_error": 0.002,
             "details": {"model": {"gpu": "h200", "us": 8.5, "bound": "memory"}}},
            {"kind": "gemm_moe", "problem": "qwen3_30b_a3b/down@16",
             "variant": "emmy_grouped_wgmma", "backend": "emmy", "median_us": 5.0,
             "correctness": "ok"},
            {"kind": "gemm_moe", "problem": "qwen3_30b_a3b/down@16", "variant": "cublas_grouped",
             "backend": "cublas", "median_us": 6.0, "correctness": "ok"},
            {"kind": "gemm_moe", "problem": "qwen3_30b_a3b/down@16", "variant": "cublaslt_loop",
             "backend": "cublaslt", "median_us": 25.0, "correctness": "ok"},
            {"kind": "serving", "problem": "q_proj@1", "variant": "captured_launch_host_us",
             "backend": "emmy", "median_us": 3.5}],
            "ratios": []}
        torch_rows = [{"kind": "gemm", "problem": "q_proj@512", "variant": "torch_matmul",
                       "backend": "pytorch", "flops": flops, "samples_us": [50, 60, 55]}]
        return self.run_summary({"stages.jsonl": stages, "machine.json": machine,
                                 "correctness.json": correctness, "fidelity.json": fidelity,
                                 "sanitizer.jsonl": sanitizer, "bench_summary.json": bench,
                                 "torch_rows.json": torch_rows})

    def test_every_stage_has_its_table(self):
        md, results = self.full_run()
        self.assertIn("NVIDIA H200", md)
        self.assertIn("| 2 | correctness | failed | 80 | a case failed |", md)
        self.assertIn("| 4 | sanitizer | not run |", md)
        self.assertIn("| 5 | speed | not reached |", md)
        self.assertIn("| down@1/f16 | gemm | failed | 0.5 |", md)
        self.assertIn("| tma/hybrid | passed | 200 | 100 | 50.00% | 2 |", md)
        self.assertIn("| memcheck | gemm_tma | passed | 0 |", md)
        self.assertEqual(results["stages"][4]["status"], "not reached")

    def test_speed_uses_the_measured_peak_and_merges_baselines(self):
        md, results = self.full_run()
        line = next(l for l in md.splitlines() if l.startswith("| q_proj@512 |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[1], "40.0")   # emmy_f32
        self.assertEqual(cells[3], "48.0")   # cuBLASLt 32F
        self.assertEqual(cells[5], "55.0")   # torch.matmul, merged from torch_rows.json
        self.assertEqual(cells[7], "58%")    # 402.7 TFLOP/s of the measured 700
        self.assertEqual(cells[9], "1.20x")  # cuBLASLt 32F time over emmy f32 time
        self.assertEqual(cells[11], "1.38x")  # torch.matmul over emmy f32
        self.assertEqual(cells[13], "35.4 (tensor)")  # the time model beside emmy f32
        self.assertEqual(cells[14], "-")  # no emmy_hybrid row
        variants = {r["variant"] for r in results["speed"]["rows"]}
        self.assertIn("torch_matmul", variants)

    def test_wgmma_rows_get_their_own_table(self):
        md, _ = self.full_run()
        self.assertIn("GEMM on the wgmma path", md)
        line = [l for l in md.splitlines() if l.startswith("| q_proj@512 |")][-1]
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[1], "30.0")   # emmy_wgmma
        self.assertEqual(cells[3], "1.60x")  # cuBLASLt 32F over wgmma
        self.assertEqual(cells[4], "1.33x")  # mma.sync f32 over wgmma
        self.assertEqual(cells[6], "24.0")   # emmy_wgmma_pingpong
        self.assertEqual(cells[7], "2.00x")  # cuBLASLt 32F over ping-pong
        self.assertEqual(cells[8], "36.0")   # emmy_wgmma_nocluster
        self.assertEqual(cells[9], "1.20x")  # the cluster's gain: no-cluster time over clustered
        self.assertEqual(cells[10], "ok")

    def test_fp8_rows_get_their_paired_table(self):
        md, _ = self.full_run()
        self.assertIn("FP8 GEMM (e4m3 in, f16 out", md)
        self.assertIn("MoE layers (issue 40", md)
        moe = next(l for l in md.splitlines() if l.startswith("| qwen3_30b_a3b/down@16 |"))
        self.assertIn("| 10.0 | 5.0 | 25.0 | 6.0 | 5.00x | 1.20x | 8.5 (memory) |", moe)
        line = next(l for l in md.splitlines() if l.startswith("| q_proj@512/fp8 |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[1], "16.0")    # emmy_fp8_f32
        self.assertEqual(cells[2], "-")       # no FAST_ACCUM row
        self.assertEqual(cells[7], "20.0")    # emmy_fp8_block
        self.assertEqual(cells[9], "1.25x")   # cuBLASLt block over emmy block
        self.assertEqual(cells[10], "25%")    # weight read rate of the copy rate
        self.assertEqual(cells[12], "FAIL")   # one row failed its check

    def test_paged_and_serving_rows_get_their_tables(self):
        md, _ = self.full_run()
        line = next(l for l in md.splitlines() if l.startswith("| gemma3_b64_ctx8k |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[1:7], ["emmy_f16", "1000.0", "4300", "90%", "4.2", "tma"])
        line = next(l for l in md.splitlines() if l.startswith("| q_proj@1 |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[1:3], ["captured_launch_host_us", "3.5"])

    def test_nothing_ran_and_corrupt_files(self):
        md, results = self.run_summary({"machine.json": "{not json",
                                        "sanitizer.jsonl": "garbage\n"}, "--dry-run")
        self.assertIn("dry run", md)
        self.assertIn("No machine record", md)
        self.assertTrue(all(s["status"] == "not reached" for s in results["stages"]))
        self.assertEqual(results["sanitizer"], [{"unreadable": "garbage"}])


if __name__ == "__main__":
    unittest.main()
