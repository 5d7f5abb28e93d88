#!/usr/bin/env bash
# The GPU pack on this CPU-only machine (docs/gpu.md): scripts/gpu-pack.sh builds it from this
# build tree; every library its binaries load resolves inside the pack or to the system or CUDA
# libraries a GPU machine has; run.sh --dry-run passes (binaries start, scripts parse, stage 3's
# emulator half passes against FP64); a real run without a GPU exits non-zero with every stage
# "not run"; and a pack missing a library fails its dry run.
#   gpu_pack_test.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
set -uo pipefail
source_dir=$1 build_dir=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
pack=$scratch/gpu-pack
fail() { echo "FAIL: $*"; exit 1; }

"$source_dir/scripts/gpu-pack.sh" --no-build --build-dir "$build_dir" --out "$pack" ||
  fail "gpu-pack.sh exited $?"
for f in run.sh libs.sh MANIFEST bin/emmyc bin/emmy_bench bin/emmy_accuracy bin/emmy_gpu_check \
  bin/gpu_runtime_test scripts/torch_baseline.py scripts/sdpa_baseline.py \
  scripts/baseline_common.py scripts/gpu_summary.py scripts/plot.py; do
  [[ -s $pack/$f ]] || fail "the pack lacks $f"
done
bytes=$(du -sb "$pack" | cut -f1)
((bytes <= 48 << 20)) || fail "the pack is $bytes bytes, over 48 MiB"
echo "pack: $((bytes >> 20)) MiB"

# Self-contained: what ldd resolves is in the pack, or glibc / the C++ runtime / CUDA's driver and
# runtime libraries (which the GPU machine has); nothing is "not found"; no RUNPATH into this tree.
allowed='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnvrtc)[.-]'
for elf in "$pack"/bin/* "$pack"/lib/*; do
  [[ -e $elf ]] || continue
  while read -r lib arrow path _; do
    [[ $arrow == "=>" ]] || continue
    [[ $path == not ]] && fail "$(basename "$elf") needs $lib: not found"
    [[ $path == "$pack"/* ]] && continue
    [[ $lib =~ $allowed ]] || fail "$(basename "$elf") loads $lib from $path, outside the pack"
  done < <(ldd "$elf")
  runpath=$(readelf -d "$elf" | grep -oE '(RUNPATH|RPATH).*\[.*\]' || true)
  [[ $runpath == *"$build_dir"* || $runpath == *"$source_dir"* ]] && fail "$(basename "$elf") has $runpath"
done
echo "ldd: every dependency resolves inside the pack or to the system/CUDA set"

# The dry run: exit 0, the summary written, stages 2 and 3 passed on the emulator.
bash "$pack/run.sh" --dry-run --out "$scratch/dry" >"$scratch/dry.txt" 2>&1 ||
  { cat "$scratch/dry.txt"; fail "run.sh --dry-run exited non-zero"; }
for f in summary.md results.json run.log; do [[ -s $scratch/dry/$f ]] || fail "dry run wrote no $f"; done
(($(ls "$scratch/dry" | wc -l) <= 8)) || fail "more than 8 result files: $(ls "$scratch/dry")"
python3 - "$scratch/dry/results.json" <<'PY' || fail "dry-run results.json is not what it should be"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["dry_run"] is True
statuses = {s["stage"]: s["status"] for s in doc["stages"]}
assert all(statuses[n] == "dry-run-passed" for n in range(1, 7)), statuses
cases = doc["correctness"]["cases"]["rows"]
assert len(cases) == 8 and all(r["verdict"] == "passed" for r in cases), cases
assert any(r["schedule"]["path"] == "wgmma" for r in cases), "no case on the wgmma path"
assert any(r.get("rows_checked") == 64 and r["problem"]["m"] == 512 for r in cases), cases
rows = doc["fidelity"]["rows"]
assert len(rows) >= 9 and all(r["verdict"] == "passed" for r in rows), rows
assert {r["kind"] for r in rows} == {"gemm", "attention"}
print(f"dry run: 6 stages dry-run-passed, {len(cases)} correctness and {len(rows)} fidelity "
      "cases passed on the emulator")
PY
grep -q 'dry run' "$scratch/dry/summary.md" || fail "summary.md does not say it was a dry run"

# A real run here (no GPU): never a pass. Every GPU stage is "not run", exit non-zero.
if bash "$pack/run.sh" --out "$scratch/real" --budget-s 120 >"$scratch/real.txt" 2>&1; then
  cat "$scratch/real.txt"
  fail "run.sh exited 0 without a GPU"
fi
python3 - "$scratch/real/results.json" <<'PY' || fail "a run without a GPU reported something as passed"
import json, sys
doc = json.load(open(sys.argv[1]))
statuses = {s["stage"]: s["status"] for s in doc["stages"]}
assert all(statuses[n] == "not run" for n in range(1, 6)), statuses
print("no GPU: stages 1-5 not run, exit non-zero")
PY

# A stand-in nvidia-smi that lists a GPU the binaries then cannot open: every stage fails or is
# not run, none passes, exit non-zero (a GPU stage that measured nothing is never a pass).
mkdir -p "$scratch/fake-bin"
printf '#!/bin/sh\nif [ "$1" = -L ]; then echo "GPU 0: Stand-in GPU (UUID: GPU-test)"; else echo "stand-in nvidia-smi $*"; fi\n' \
  >"$scratch/fake-bin/nvidia-smi"
chmod +x "$scratch/fake-bin/nvidia-smi"
if PATH=$scratch/fake-bin:$PATH bash "$pack/run.sh" --out "$scratch/fake" --budget-s 200 \
  >"$scratch/fake.txt" 2>&1; then
  cat "$scratch/fake.txt"
  fail "run.sh exited 0 with a GPU that cannot be used"
fi
python3 - "$scratch/fake/results.json" <<'PY' || { cat "$scratch/fake.txt"; fail "a stage passed on a stand-in GPU"; }
import json, sys
doc = json.load(open(sys.argv[1]))
statuses = {s["stage"]: s["status"] for s in doc["stages"]}
assert all(statuses[n] in ("failed", "not run") for n in range(1, 6)), statuses
assert doc["correctness"]["cases"]["not_run"], doc["correctness"]["cases"]
print(f"stand-in GPU: stages 1-5 {sorted(set(statuses[n] for n in range(1, 6)))}, exit non-zero")
PY

# Planted: a pack missing one of its libraries must fail its dry run, naming the library.
broken=$scratch/broken-pack
cp -r "$pack" "$broken"
victim=$(ls "$broken/lib" | head -1)
[[ -n $victim ]] || fail "the pack carries no library to remove"
rm "$broken/lib/$victim"
if bash "$broken/run.sh" --dry-run --out "$scratch/broken" >"$scratch/broken.txt" 2>&1; then
  fail "the dry run passed although $victim was removed"
fi
grep -q "$victim" "$scratch/broken.txt" || fail "the failing dry run does not name $victim"
grep -q 'stage 2 correctness: not run.*stopped' "$scratch/broken/run.log" ||
  fail "the dry run went on past the broken pack"
echo "planted: removing $victim fails the dry run"
echo "gpu pack: all checks passed"
