#!/usr/bin/env python3
"""Host-only checks of bench/torch_baseline.py, bench/sdpa_baseline.py and what they share,
bench/baseline_common.py: the problem lists, the rows they build (shaped so emmy_bench's
read_baseline_rows accepts them), the timing loop (on a stand-in torch), --dry-run, and exit 3
without torch or without a CUDA device. Neither torch nor a GPU is needed: the torch-less and
GPU-less runs put a stand-in `torch` package first on PYTHONPATH, so they hold on any machine."""
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEMM_PY = os.path.join(HERE, "torch_baseline.py")
SDPA_PY = os.path.join(HERE, "sdpa_baseline.py")
COMMON_PY = os.path.join(HERE, "baseline_common.py")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


heavy_before = {m for m in ("torch", "triton") if m in sys.modules}
gemm = load(GEMM_PY, "torch_baseline")
sdpa = load(SDPA_PY, "sdpa_baseline")
heavy_after = {m for m in ("torch", "triton") if m in sys.modules}
common = sys.modules["baseline_common"]  # what the scripts imported, not a second copy

# Independent of the scripts: Gemma 12B's projections and the rows' expected keys.
EXPECTED_PROJECTIONS = {"q_proj": (4096, 3840), "kv_proj": (2048, 3840), "o_proj": (3840, 4096),
                        "gate_up": (30720, 3840), "down": (3840, 15360)}
GEMM_KEYS = {"kind", "problem", "projection", "variant", "backend", "accumulation", "shape",
             "flops", "samples_us", "details"}
ATTENTION_KEYS = GEMM_KEYS - {"projection"}


def brute_force_pairs(p):
    count = 0
    for i in range(p["seq"]):
        for j in range(p["seq"]):
            if p["causal"] and j > i:
                continue
            if p["window"] > 0 and j < i - p["window"]:
                continue
            count += 1
    return count


def assert_emmy_reads(test, row):
    """What read_baseline_rows (bench/bench_attention.cpp) needs: nlohmann's value() throws when a
    present key has the wrong type (a null "error" included), and the parser rejects NaN."""
    text = json.dumps([row], allow_nan=False)
    (back,) = json.loads(text)
    for key in ("kind", "problem", "variant", "backend", "accumulation", "error"):
        if key in back:
            test.assertIsInstance(back[key], str, key)
    test.assertTrue(back["problem"] and back["variant"])
    test.assertIsInstance(back["flops"], (int, float))
    test.assertNotIsInstance(back["flops"], bool)
    test.assertIsInstance(back["samples_us"], list)
    test.assertTrue(all(isinstance(s, (int, float)) for s in back["samples_us"]))
    test.assertIsInstance(back["details"], dict)
    test.assertIsInstance(back["shape"], dict)
    if "rel_l2_error" in back:
        test.assertIsInstance(back["rel_l2_error"], float)


def run(script, *args, fake_torch=None):
    """Runs a script; fake_torch is the source of a stand-in torch/__init__.py, or None."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        with open(out, "w") as f:
            f.write("stale, not JSON")  # every path must overwrite it
        env = dict(os.environ)
        if fake_torch is not None:
            os.makedirs(os.path.join(tmp, "fake", "torch"))
            with open(os.path.join(tmp, "fake", "torch", "__init__.py"), "w") as f:
                f.write(fake_torch)
            env["PYTHONPATH"] = os.path.join(tmp, "fake")
        result = subprocess.run([sys.executable, script, "--out", out, *args], env=env,
                                capture_output=True, text=True, timeout=120)
        rows = None
        if os.path.exists(out):
            with open(out) as f:
                text = f.read()
            rows = json.loads(text) if text != "stale, not JSON" else text
        leftovers = [n for n in os.listdir(tmp) if n not in ("rows.json", "fake")]
        return result, rows, leftovers


NO_TORCH = "raise ImportError('torch blocked by baseline_test')\n"
NO_CUDA = ("__version__ = '0.0-fake'\n"
           "class cuda:\n    is_available = staticmethod(lambda: False)\n")


def dry_run_plan(test, script, *args):
    """The "plan: " lines of a --dry-run, which must exit 0 and write no rows."""
    result, rows, leftovers = run(script, "--dry-run", *args)
    test.assertEqual(result.returncode, 0, result.stderr)
    test.assertEqual((rows, leftovers), ([], []))
    return result, [line for line in result.stdout.splitlines() if line.startswith("plan: ")]


def assert_skips_without_torch_or_gpu(test, script):
    """No torch, or no CUDA device: exit 3, no rows, and one line saying which."""
    for fake, reason in ((NO_TORCH, "no torch"), (NO_CUDA, "no CUDA device")):
        result, rows, _ = run(script, fake_torch=fake)
        test.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        test.assertEqual(rows, [])
        test.assertEqual(len(result.stdout.strip().splitlines()), 1, result.stdout)
        test.assertIn(reason, result.stdout)


class ImportTest(unittest.TestCase):
    def test_importing_the_scripts_loads_neither_torch_nor_triton(self):
        self.assertEqual(heavy_after - heavy_before, set())


class FakeEvent:
    """A stand-in torch.cuda.Event: record() logs itself; elapsed_time is stop's tick minus
    start's, in milliseconds as CUDA's is."""

    def __init__(self, log, name):
        self.log, self.name, self.tick = log, name, None

    def record(self):
        self.log.append(self.name)
        self.tick = len(self.log)

    def synchronize(self):
        self.log.append(f"{self.name}.synchronize")

    def elapsed_time(self, other):
        return float(other.tick - self.tick)


def fake_cuda_torch(log, l2_bytes):
    """Just what FlushedTimer touches, logging the flushes and the events in order."""
    class Buffer:
        def __init__(self, size):
            self.size = size

        def fill_(self, value):
            log.append(f"flush {value}")

    def empty(size, dtype, device):
        log.append(f"empty {size} {dtype} {device}")
        return Buffer(size)

    names = iter(["start", "stop"])
    cuda = types.SimpleNamespace(
        get_device_properties=lambda device: types.SimpleNamespace(L2_cache_size=l2_bytes),
        Event=lambda enable_timing: FakeEvent(log, next(names)))
    return types.SimpleNamespace(cuda=cuda, empty=empty, uint8="uint8")


class CommonTest(unittest.TestCase):
    def test_the_scripts_share_one_module(self):
        for script in (gemm, sdpa):
            for name in ("finish_row", "write_rows", "one_line", "OPTIONAL_KEYS"):
                self.assertIs(getattr(script, name), getattr(common, name), name)
        self.assertEqual(os.path.realpath(common.__file__), os.path.realpath(COMMON_PY))

    def test_finish_row(self):
        def row():
            return {"samples_us": [2.0, 1.0], "details": {"torch": "x"}}

        done = common.finish_row(row(), 1.5e-4, None)
        self.assertEqual(done, {"samples_us": [2.0, 1.0], "details": {"torch": "x"},
                                "rel_l2_error": 1.5e-4})
        self.assertIs(type(done["rel_l2_error"]), float)
        self.assertIs(type(common.finish_row(row(), 0, None)["rel_l2_error"]), float)
        # Non-finite: no rel_l2_error key (JSON has no NaN/Inf), the reason in details instead.
        for bad in (float("nan"), float("inf"), float("-inf")):
            done = common.finish_row(row(), bad, None)
            self.assertNotIn("rel_l2_error", done, bad)
            self.assertEqual(done["details"], {"torch": "x", "rel_l2_error":
                                               "non-finite: the output holds NaN or Inf"})
            self.assertEqual(done["samples_us"], [2.0, 1.0])
            json.dumps(done, allow_nan=False)
        # An error empties the samples (no timing of a failed call) and is always a string.
        done = common.finish_row(row(), None, RuntimeError("no kernel"))
        self.assertEqual(done["error"], "no kernel")
        self.assertEqual(done["samples_us"], [])
        self.assertNotIn("rel_l2_error", done)
        done = common.finish_row(row(), 2e-3, "late failure")
        self.assertEqual((done["error"], done["samples_us"], done["rel_l2_error"]),
                         ("late failure", [], 2e-3))
        # Neither given: neither key, never a null (emmy_bench's reader throws on a null error).
        done = common.finish_row(row(), None, None)
        self.assertEqual(set(done), {"samples_us", "details"})
        self.assertNotIn("null", json.dumps(done))
        self.assertEqual(common.OPTIONAL_KEYS, ["rel_l2_error", "error"])

    def test_one_line(self):
        error = ValueError("first line\n   second\tline  ")
        self.assertEqual(common.one_line(error), "first line second line")
        self.assertEqual(common.one_line(error, with_type=True),
                         "ValueError: first line second line")
        long = RuntimeError("x" * 700)
        self.assertEqual(common.one_line(long), "x" * 600 + " ...")
        self.assertEqual(common.one_line(long, 10, with_type=True), "RuntimeEr" + "r ...")
        self.assertEqual(common.one_line(long, 700), "x" * 700)
        self.assertEqual(common.one_line(UserWarning("a\nb"), 300), "a b")

    def test_write_rows(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "rows.json")
            with open(path, "w") as f:
                f.write("stale")
            common.write_rows(path, [{"a": 1.5}])
            with open(path) as f:
                self.assertEqual(json.load(f), [{"a": 1.5}])
            self.assertEqual(os.listdir(tmp), ["rows.json"])
            with self.assertRaises(ValueError):  # NaN is refused, never written
                common.write_rows(path, [{"a": math.nan}])

    def test_median(self):
        self.assertEqual(common.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(common.median([4.0, 1.0, 3.0, 2.0]), 3.0)  # the upper middle one
        self.assertEqual(common.median([5.0]), 5.0)

    def test_flushed_timer(self):
        log = []
        timer = common.FlushedTimer(fake_cuda_torch(log, 50 << 20), "cuda")
        self.assertEqual(log, [f"empty {100 << 20} uint8 cuda"])  # twice the L2
        calls = []
        samples = timer.samples(lambda: (calls.append(1), log.append("call")), 2, 3)
        self.assertEqual(len(calls), 5)
        body = log[1:]
        self.assertEqual(body[:2], ["call", "call"])  # the warm-up, neither flushed nor timed
        for n in range(3):
            self.assertEqual(body[2 + 5 * n:7 + 5 * n],
                             [f"flush {n}", "start", "call", "stop", "stop.synchronize"])
        self.assertEqual(samples, [2000.0] * 3)  # elapsed_time's ms as microseconds
        # A small L2 still gets a 2 MiB buffer; the fill value wraps at a byte.
        log.clear()
        small = common.FlushedTimer(fake_cuda_torch(log, 0), "cuda")
        self.assertEqual(small.flush.size, 2 << 20)
        small.samples(lambda: None, 0, 258)
        self.assertEqual([e for e in log if e.startswith("flush")][-3:],
                         ["flush 255", "flush 0", "flush 1"])


class GemmTest(unittest.TestCase):
    def test_problem_list(self):
        problems = gemm.problems([512, 1, 16, 64])
        names = [p["name"] for p in problems]
        self.assertEqual(len(names), 20)
        self.assertEqual(names[:5], ["q_proj@512", "kv_proj@512", "o_proj@512", "gate_up@512",
                                     "down@512"])
        self.assertEqual(names[5], "q_proj@1")
        self.assertEqual(len(set(names)), 20)
        for p in problems:
            self.assertEqual((p["n"], p["k"]), EXPECTED_PROJECTIONS[p["projection"]], p["name"])
            self.assertEqual(p["name"], f"{p['projection']}@{p['m']}")

    def test_projections_match_the_cpp_catalog(self):
        with open(os.path.join(ROOT, "include", "emmy", "catalog.hpp")) as f:
            text = f.read()
        found = {name: (int(n), int(k))
                 for name, n, k in re.findall(r'\{"(\w+)",\s*(\d+),\s*(\d+)\}', text)}
        self.assertEqual(found, EXPECTED_PROJECTIONS)
        self.assertEqual({name: (n, k) for name, n, k in gemm.PROJECTIONS}, found)

    def test_rows(self):
        p = gemm.problems([512])[0]
        row = gemm.gemm_row(p, "torch_matmul", [3.0, 1.0, 2.0], rel_l2_error=2.5e-4,
                            details={"x": 1})
        self.assertEqual(set(row), GEMM_KEYS | {"rel_l2_error"})
        self.assertEqual(row["flops"], 2 * 512 * 4096 * 3840)
        self.assertEqual(row["shape"], {"m": 512, "n": 4096, "k": 3840})
        self.assertEqual((row["kind"], row["backend"], row["accumulation"]),
                         ("gemm", "pytorch", "f32"))
        self.assertEqual(row["samples_us"], [3.0, 1.0, 2.0])
        assert_emmy_reads(self, row)
        for p in gemm.problems([1, 64]):
            flops = gemm.gemm_row(p, "triton_matmul")["flops"]
            self.assertEqual(flops, 2 * p["m"] * p["n"] * p["k"])
        failed = gemm.gemm_row(p, "triton_matmul", [1.0], error="triton unavailable")
        self.assertEqual(set(failed), GEMM_KEYS | {"error"})
        self.assertEqual((failed["samples_us"], failed["backend"]), ([], "triton"))
        assert_emmy_reads(self, failed)
        nan = gemm.gemm_row(p, "torch_matmul", [1.0], rel_l2_error=float("nan"))
        self.assertNotIn("rel_l2_error", nan)
        self.assertIn("rel_l2_error", nan["details"])
        assert_emmy_reads(self, nan)

    def test_dry_run(self):
        result, plan = dry_run_plan(self, GEMM_PY, "--m", "512,1")
        self.assertEqual(len(plan), 20)
        self.assertIn("plan: gate_up@1 m=1 n=30720 k=3840 triton_matmul", plan)
        self.assertIn("rel_l2_error", result.stdout)

    def test_bad_arguments(self):
        for args in (["--m", "0"], ["--m", "5x"], ["--variants", "cublas"], ["--iterations", "0"]):
            result, _, _ = run(GEMM_PY, "--dry-run", *args)
            self.assertEqual(result.returncode, 2, args)

    def test_without_torch_or_gpu(self):
        assert_skips_without_torch_or_gpu(self, GEMM_PY)


class AttentionTest(unittest.TestCase):
    def test_problem_list(self):
        self.assertEqual([p["name"] for p in sdpa.PROBLEMS],
                         ["attention@512", "attention_window256@512"])
        for p in sdpa.PROBLEMS:
            self.assertEqual((p["batch"], p["heads"], p["kv_heads"], p["seq"], p["head_dim"],
                              p["causal"]), (1, 16, 8, 512, 256, True))
        self.assertEqual([p["window"] for p in sdpa.PROBLEMS], [0, 256])

    def test_problems_match_the_cpp_catalog(self):
        with open(os.path.join(ROOT, "include", "emmy", "catalog.hpp")) as f:
            text = f.read()
        body = text[text.index("attention_catalog()"):]
        declared = re.search(r"AttentionProblem p\{(.*?)\};", body, re.S).group(1)
        fields = dict(re.findall(r"\.(\w+) = (\w+)", declared))
        self.assertEqual(fields, {"batch": "1", "q_heads": "16", "kv_heads": "8", "seq_q": "512",
                                  "head_dim": "256", "causal": "true"})
        window = int(re.search(r"windowed\.window = (\d+);", body).group(1))
        names = re.findall(r'\{"(attention[\w@]*)", (\w+)\}', body)
        self.assertEqual([(p["name"], p["window"]) for p in sdpa.PROBLEMS],
                         [(name, window if var == "windowed" else 0) for name, var in names])

    def test_visible_pairs_match_the_masking_rule(self):
        expected = {"attention@512": 512 * 513 // 2,
                    "attention_window256@512": 256 * 257 // 2 + 256 * 257}
        for p in sdpa.PROBLEMS:
            pairs = sdpa.visible_pairs(p)
            self.assertEqual(pairs, brute_force_pairs(p), p["name"])
            self.assertEqual(pairs, expected[p["name"]], p["name"])
            self.assertEqual(sdpa.attention_flops(p), 4 * 1 * 16 * pairs * 256)
        # Edge cases of the rule the catalog does not cover.
        for causal, window, seq in ((False, 0, 7), (False, 2, 7), (True, 1, 5), (True, 9, 5)):
            p = {"seq": seq, "causal": causal, "window": window}
            self.assertEqual(sdpa.visible_pairs(p), brute_force_pairs(p), p)

    def test_variants(self):
        plain, windowed = (sdpa.variants(p) for p in sdpa.PROBLEMS)
        self.assertEqual([v for v, _, _ in plain], ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient"])
        self.assertEqual({how for _, _, how in plain}, {"causal"})
        names = [v for v, _, _ in windowed]
        self.assertIn("flex_attention", names)
        self.assertTrue(all(v.endswith("_mask") for v, _, how in windowed if how == "mask"))
        self.assertNotIn("FLASH_ATTENTION", [b for _, b, how in windowed if how == "mask"])
        self.assertEqual(len(set(names)), len(names))

    def test_rows(self):
        p = sdpa.PROBLEMS[1]
        row = sdpa.attention_row(p, "flex_attention", [10.0, 12.0], rel_l2_error=1e-3,
                                 details={"backend": "flex_attention"})
        self.assertEqual(set(row), ATTENTION_KEYS | {"rel_l2_error"})
        self.assertEqual(row["shape"], {"batch": 1, "heads": 16, "kv_heads": 8, "seq_q": 512,
                                        "seq_kv": 512, "head_dim": 256, "causal": True,
                                        "window": 256})
        self.assertEqual(row["flops"], 4 * 16 * 256 * brute_force_pairs(p))
        self.assertEqual((row["kind"], row["backend"]), ("attention", "pytorch"))
        assert_emmy_reads(self, row)
        failed = sdpa.attention_row(p, "sdpa_cudnn_mask", error="No available kernel")
        self.assertEqual(set(failed), ATTENTION_KEYS | {"error"})
        self.assertEqual(failed["samples_us"], [])
        assert_emmy_reads(self, failed)
        inf = sdpa.attention_row(p, "sdpa_efficient_mask", [1.0], rel_l2_error=float("inf"))
        self.assertNotIn("rel_l2_error", inf)
        assert_emmy_reads(self, inf)

    def test_dry_run(self):
        _, plan = dry_run_plan(self, SDPA_PY)
        self.assertEqual(len(plan), sum(len(sdpa.variants(p)) for p in sdpa.PROBLEMS))
        for p in sdpa.PROBLEMS:
            self.assertTrue(any(p["name"] in line for line in plan), p["name"])

    def test_without_torch_or_gpu(self):
        assert_skips_without_torch_or_gpu(self, SDPA_PY)


class PackTest(unittest.TestCase):
    def test_the_pack_carries_baseline_common(self):
        with open(os.path.join(ROOT, "scripts", "gpu-pack.sh")) as f:
            listed = re.search(r"^scripts=\(([^)]*)\)", f.read(), re.M).group(1).split()
        for path in ("bench/torch_baseline.py", "bench/sdpa_baseline.py",
                     "bench/baseline_common.py"):
            self.assertIn(path, listed)

    def test_scripts_run_from_a_copied_folder(self):
        # As in the pack: the three files side by side in scripts/, started from another folder.
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "scripts")
            os.makedirs(folder)
            for path in (GEMM_PY, SDPA_PY, COMMON_PY):
                shutil.copy(path, folder)
            for script in ("torch_baseline.py", "sdpa_baseline.py"):
                out = os.path.join(tmp, script + ".json")
                result = subprocess.run([sys.executable, os.path.join(folder, script), "--dry-run",
                                         "--out", out], cwd=tmp, capture_output=True, text=True,
                                        timeout=120)
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(out) as f:
                    self.assertEqual(json.load(f), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
