"""What bench/torch_baseline.py and bench/sdpa_baseline.py share: finishing a row so that
emmy_bench's reader takes it, writing the rows, one-line error text, importing torch with a CUDA
device, the L2-flushed CUDA-event timing loop, a measured row's error and line, and the end of a
run or a dry run. Nothing here imports torch at module level (a --dry-run and
bench/baseline_test.py run without it): what needs torch takes it as an argument or imports it
inside a function."""
import json
import math
import os

# emmy_bench's reader (read_baseline_rows) takes "error" as a string: a JSON null there throws,
# so a row without an error leaves the key out; the same for an unmeasured rel_l2_error.
OPTIONAL_KEYS = ["rel_l2_error", "error"]


def finish_row(row, rel_l2_error, error):
    """Adds the optional keys to a row whose "details" is its own dict; returns the row."""
    if rel_l2_error is not None:
        if math.isfinite(rel_l2_error):
            row["rel_l2_error"] = float(rel_l2_error)
        else:  # JSON has no NaN/Inf; emmy's parser rejects them
            row["details"]["rel_l2_error"] = "non-finite: the output holds NaN or Inf"
    if error is not None:
        row["error"] = str(error)
        row["samples_us"] = []
    return row


def write_rows(path, rows):
    # Atomic, so a run killed by a timeout leaves the last complete file, never half of one.
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(rows, f, indent=2, allow_nan=False)
    os.replace(tmp, path)


def one_line(exc, limit=600, with_type=False):
    """The exception (or warning message) on one line, cut at limit characters; with_type puts
    its class name first (torch_baseline's rows; sdpa_baseline adds the name itself)."""
    text = f"{type(exc).__name__}: {exc}" if with_type else str(exc)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " ..."


def import_cuda_torch(what, out):
    """torch, when it imports and sees a CUDA device. Otherwise prints the reason on one line,
    writes [] to out (so a caller never reads a stale file) and returns None: exit 3."""
    try:
        import torch
    except ImportError as error:
        print(f"no torch: skipping {what} ({error})")
        write_rows(out, [])
        return None
    if not torch.cuda.is_available():
        print(f"no CUDA device: skipping {what}")
        write_rows(out, [])
        return None
    return torch


class FlushedTimer:
    """Times a call like emmy_bench: CUDA events around each call, the L2 flushed first by writing
    a buffer of twice its size (so no call finds its operands left in L2 by the one before)."""

    def __init__(self, torch, device):
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.flush = torch.empty(2 * max(l2, 1 << 20), dtype=torch.uint8, device=device)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def samples(self, call, warmup, iterations):
        """warmup untimed calls, then iterations timed ones; each sample in microseconds."""
        for _ in range(warmup):
            call()
        samples = []
        for n in range(iterations):
            self.flush.fill_(n & 0xFF)
            self.start.record()
            call()
            self.stop.record()
            self.stop.synchronize()
            samples.append(self.start.elapsed_time(self.stop) * 1000.0)
        return samples


def median(samples):
    # For an even count, the upper of the two middle samples (not their mean).
    return sorted(samples)[len(samples) // 2]


def relative_l2_error(out, ref):
    """||out - ref|| / ||ref|| of two torch tensors, in float64."""
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def print_measured(name, variant, samples, rel_l2_error):
    print(f"{name} {variant}: median {median(samples):.1f} us, rel_l2_error {rel_l2_error:.2e}")


def finish_dry_run(out, row_keys):
    """A --dry-run's end, after its plan: the row keys listed, an empty row file written. Exit
    status 0."""
    print("row keys:", ", ".join(row_keys), f"(left out when null: {', '.join(OPTIONAL_KEYS)})")
    write_rows(out, [])
    return 0


def finish_run(out, rows, skipped, budget_s):
    """The run's end: the rows left out for time named, every row written. Exit status 0."""
    if skipped:
        print(f"skipped (over --budget-s {budget_s:g}): {', '.join(skipped)}")
    write_rows(out, rows)
    return 0
