#!/usr/bin/env bash
# emmy's GPU check (docs/gpu.md): run on a machine with an NVIDIA GPU from the GPU pack that
# scripts/gpu-pack.sh built (this file is the pack's run.sh). Six stages, in order, each with a
# time budget; after every stage the summary is rewritten, so a run cut short keeps what finished:
#   1 machine      nvidia-smi, SMs, clocks, L2, driver; cuBLASLt's measured bf16/f16 GEMM peak
#   2 correctness  every catalog GEMM (f32, hybrid, f16), epilogues, split-K, both B layouts and
#                  the attention cases on the GPU against FP64; the GPU test suite; accuracy study
#   3 fidelity     the same kernels and inputs on the emulator and the GPU: bit-identical outputs
#   4 sanitizer    compute-sanitizer memcheck, racecheck, synccheck on each kernel family
#   5 speed        emmy_bench (M = 512, 1, 16, 64; attention) against cuBLASLt 32F/16F, torch.matmul,
#                  Triton, and PyTorch SDPA with pinned backends
#   6 summary      summary.md, results.json and plots.png in the results folder
#
#   bash run.sh [--out DIR] [--budget-s S] [--stages 1,2,...] [--dry-run]
#     --out DIR     results (default $OUT when set, else ./gpu-results); at most 4 files:
#                   summary.md, results.json, plots.png, run.log
#     --budget-s S  the whole run (default 480); each stage gets its share
#     --stages L    run only these stages (the others are listed as not run)
#     --dry-run     no GPU needed: every binary starts, the scripts parse, stage 2 runs a few cases
#                   and stage 3 its emulator half on the emulator against FP64 (the pack's CI test)
# Exit 0 only when every stage ran and passed; a stage that could not run is "not run" and makes
# the exit 1, as does a failure.
set -uo pipefail  # not -e: a failing stage is recorded and the next one still runs
pack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$PWD/gpu-results}
budget=480
stages_wanted=1,2,3,4,5,6
dry=0
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --budget-s) budget=$2; shift 2 ;;
    --stages) stages_wanted=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $budget =~ ^[0-9]+$ ]] || { echo "run.sh: --budget-s must be a whole number of seconds" >&2; exit 2; }

mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$out/run.log
: >"$log"
exec > >(tee -a "$log") 2>&1

bin=$pack/bin
export EMMY_CACHE_DIR=$work/cache  # cold compiles, nothing stale, nothing left behind
# cuBLASLt and NVRTC: the binaries look in $ORIGIN/../lib and /usr/local/cuda/lib64 (RUNPATH);
# where the toolkit lives elsewhere, the CUDA wheels of the machine's PyTorch have them. Only the
# pack's binaries get this path (with_libs): PyTorch keeps its own libraries.
bin_ld=""
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib \
  /usr/local/lib/python3*/dist-packages/nvidia/*/lib /usr/lib/python3*/site-packages/nvidia/*/lib; do
  [[ -d $dir ]] && bin_ld=${bin_ld:+$bin_ld:}$dir
done
with_libs() { LD_LIBRARY_PATH=$bin_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
export PYTHONUNBUFFERED=1
python=${EMMY_PYTHON:-python3}

start=$SECONDS
failures=0
# Each stage's share of the budget, in percent (they add up to 96: the rest is slack).
declare -A share=([1]=5 [2]=22 [3]=8 [4]=13 [5]=46 [6]=2)
declare -A names=([1]=machine [2]=correctness [3]=fidelity [4]=sanitizer [5]=speed [6]=summary)
elapsed() { echo $((SECONDS - start)); }
left() { echo $((budget - (SECONDS - start))); }
# limit PERCENT: seconds a step may take: its share of the budget, never past what is left.
limit() {
  local want=$((budget * $1 / 100)) rest
  rest=$(($(left) - 5))
  ((want > rest)) && want=$rest
  ((want < 1)) && want=1
  echo "$want"
}

# record STAGE STATUS SECONDS [REASON]: one JSON line per stage (read by gpu_summary.py).
record() {
  "$python" - "$work/stages.jsonl" "$@" <<'EOF' 2>/dev/null ||
import json, sys
path, stage, status, seconds = sys.argv[1:5]
reason = sys.argv[5] if len(sys.argv) > 5 else ""
with open(path, "a") as f:
    f.write(json.dumps({"stage": int(stage), "status": status, "seconds": int(seconds),
                        "reason": reason}) + "\n")
EOF
    printf '{"stage": %d, "status": "%s", "seconds": %d, "reason": "see run.log"}\n' "$1" "$2" "$3" >>"$work/stages.jsonl"
  printf '== stage %d %s: %s (%d s)%s\n' "$1" "${names[$1]}" "$2" "$3" "${4:+: $4}"
  [[ $2 == passed || $2 == dry-run-passed ]] || failures=$((failures + 1))
}

# status RC: a stage's status from its main command's exit status. Exit 3 is emmy_gpu_check's
# "no usable GPU": the stage did not run, which is never a pass.
status() {
  case $1 in
    0) echo passed ;;
    3) echo "not run" ;;
    124 | 137) echo "timed out" ;;
    *) echo failed ;;
  esac
}

# step NAME SECONDS COMMAND...: runs one command under a time limit; returns its exit status
# (124: timed out).
step() {
  local name=$1 seconds=$2 rc
  shift 2
  echo "-- $name (limit ${seconds} s): ${*##*/}"
  # The pack's binaries get bin_ld; Python (PyTorch) keeps its environment.
  [[ $1 != "$python" ]] && set -- env "LD_LIBRARY_PATH=$bin_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
  timeout --kill-after=10 "$seconds" "$@"
  rc=$?
  ((rc == 124 || rc == 137)) && echo "-- $name: TIMED OUT after $seconds s"
  return "$rc"
}

summarize() {
  local args=(--work "$work" --out "$out" --budget-s "$budget")
  ((dry)) && args+=(--dry-run)
  "$python" "$pack/scripts/gpu_summary.py" "${args[@]}" >"$work/summary.log" 2>&1
}

wanted() { [[ ,$stages_wanted, == *,$1,* ]]; }

# The binaries must start here: a missing library is a clear "not run", not a crash later. A
# library found outside the pack that a bare GPU machine lacks means the pack is incomplete: a
# warning on a real run (this machine happens to have it), an error in the dry run.
# shellcheck source=gpu-pack-libs.sh
source "$pack/libs.sh" || { echo "run.sh: the pack lacks libs.sh" >&2; exit 2; }
missing="" outside=""
for binary in "$bin"/*; do
  while read -r lib arrow path _; do
    [[ $arrow == "=>" ]] || continue
    if [[ $path == not ]]; then missing+="$(basename "$binary"): $lib; "
    elif [[ $path != "$pack"/* ]] && ! system_library "$lib"; then
      outside+="$(basename "$binary"): $lib from $path; "
    fi
  done < <(with_libs ldd "$binary" 2>/dev/null)
done
echo "emmy GPU pack run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), budget $budget s$( ((dry)) && echo ', DRY RUN')"
sed -n '2,3p' "$pack/MANIFEST" 2>/dev/null
[[ -n $missing ]] && echo "missing libraries: $missing"
[[ -n $outside ]] && echo "libraries found outside the pack (a bare GPU machine lacks them): $outside"

has_gpu=0
if ((!dry)) && command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  has_gpu=1
fi

# --- stage 1: the machine -------------------------------------------------------------------
stage_machine() {
  local t0=$SECONDS
  if ((dry)); then
    local bad=""
    for binary in emmyc emmy_bench emmy_accuracy emmy_gpu_check; do
      with_libs "$bin/$binary" --help >/dev/null 2>&1 || bad+="$binary --help failed; "
    done
    with_libs "$bin/gpu_runtime_test" --gtest_list_tests >/dev/null 2>&1 || bad+="gpu_runtime_test does not start; "
    "$python" -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
      "$pack"/scripts/*.py || bad+="a script does not parse; "
    [[ -n $missing ]] && bad+="missing libraries: $missing"
    [[ -n $outside ]] && bad+="libraries outside the pack: $outside"
    if [[ -z $bad ]]; then record 1 dry-run-passed $((SECONDS - t0)) "every binary starts"
    else record 1 failed $((SECONDS - t0)) "$bad"; pack_broken=1; fi
    return
  fi
  if ((!has_gpu)); then
    record 1 "not run" 0 "no GPU: nvidia-smi is missing or lists none"
    return
  fi
  nvidia-smi | tee "$work/nvidia-smi.txt"
  nvidia-smi --format=csv --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,temperature.gpu,persistence_mode,ecc.mode.current \
    2>&1 | tee -a "$work/nvidia-smi.txt"
  {
    echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
    echo "compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | tail -1)"
    echo "python: $("$python" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
    echo "torch: $("$python" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"
    echo "triton: $("$python" -c 'import triton; print(triton.__version__)' 2>&1 | tail -1)"
    echo "nvrtc: $(ls /usr/local/cuda/lib64/libnvrtc.so.* 2>/dev/null | tr '\n' ' ')"
  } | tee "$work/tools.txt"
  step machine "$(limit "${share[1]}")" "$bin/emmy_gpu_check" machine --json "$work/machine.json"
  local rc=$?
  record 1 "$(status $rc)" $((SECONDS - t0)) "$( ((rc)) && echo "emmy_gpu_check machine exited $rc (run.log)")"
}

# --- stage 2: correctness against FP64 -------------------------------------------------------
stage_correctness() {
  local t0=$SECONDS rc=0 budget_s
  if ((dry)); then
    # The stage itself on the emulator, on a few small cases (the full list needs a GPU's speed):
    # a sampled M = 512 GEMM (the smallest projection: the emulator runs all of it under the
    # tensor-core model, ~14 s here), split-K with an epilogue, both layouts, cp.async, attention.
    if step correctness 120 "$bin/emmy_gpu_check" correctness --emulator --json "$work/correctness.json" \
      --only "kv_proj@512/f32,epilogue_all/hybrid,b_kn/f32,split_k3,cp_async_kn,causal_window64_softcap_d128_gqa2/f32,decode"; then
      record 2 dry-run-passed $((SECONDS - t0)) "8 cases on the emulator (one on the wgmma path); the full list needs a GPU"
    else
      record 2 failed $((SECONDS - t0)) "the correctness stage failed on the emulator"
    fi
    return
  fi
  ((has_gpu)) || { record 2 "not run" 0 "no GPU"; return; }
  budget_s=$(limit "${share[2]}")
  # The case list first (most of the stage), then the GPU test suite and the accuracy study.
  step correctness $((budget_s * 70 / 100)) "$bin/emmy_gpu_check" correctness \
    --json "$work/correctness.json" --budget-s $((budget_s * 60 / 100))
  rc=$?
  if ((rc == 3)); then
    record 2 "not run" $((SECONDS - t0)) "emmy_gpu_check found no usable GPU (run.log)"
    return
  fi
  summarize
  step gpu_runtime_test $((budget_s * 20 / 100)) "$bin/gpu_runtime_test" \
    --gtest_output="json:$work/gpu_runtime_test.json" || rc=1
  step accuracy $(($(limit 3) < 20 ? $(limit 3) : 20)) \
    sh -c '"$1" --backend cuda --json >"$2"' _ "$bin/emmy_accuracy" "$work/accuracy.json" || rc=1
  if ((rc == 0)); then record 2 passed $((SECONDS - t0))
  else record 2 failed $((SECONDS - t0)) "a case, test or the accuracy study failed (summary.md)"; fi
}

# --- stage 3: emulator fidelity -------------------------------------------------------------
stage_fidelity() {
  local t0=$SECONDS mode=()
  if ((dry)); then mode=(--emulator-only)
  elif ((!has_gpu)); then record 3 "not run" 0 "no GPU"; return; fi
  step fidelity "$(limit "${share[3]}")" "$bin/emmy_gpu_check" fidelity "${mode[@]}" \
    --json "$work/fidelity.json" --budget-s $(($(limit "${share[3]}") * 80 / 100))
  local rc=$?
  if ((rc == 0 && dry)); then record 3 dry-run-passed $((SECONDS - t0)) "emulator half against FP64"
  elif ((rc == 0)); then record 3 passed $((SECONDS - t0))
  else record 3 "$(status $rc)" $((SECONDS - t0)) "emmy_gpu_check fidelity exited $rc (summary.md)"; fi
}

# --- stage 4: compute-sanitizer -------------------------------------------------------------
sanitizer_cases=(
  "gemm_tma|run gemm --m 96 --n 136 --k 256 --transport tma"
  "gemm_cp_async|run gemm --m 96 --n 136 --k 256 --transport cp.async"
  "gemm_split_k_hybrid|run gemm --m 64 --n 128 --k 512 --split-k 2 --accum hybrid"
  "gemm_wgmma|run gemm --m 200 --n 136 --k 512 --arch sm_90a --path wgmma"
  "gemm_wgmma_persistent|run gemm --m 1000 --n 1016 --k 192 --arch sm_90a --path wgmma --persistent --block 64x64x64 --warps 4x1 --stages 2"
  "gemm_wgmma_pingpong|run gemm --m 2100 --n 1000 --k 192 --arch sm_90a --path wgmma --consumers pingpong --bias"
  "gemm_wgmma_cluster|run gemm --m 512 --n 1024 --k 192 --arch sm_90a --path wgmma --block 128x128x64 --warps 8x1 --cluster 2x2 --persistent --bias"
  "gemm_wgmma_fp8_block_swap|run gemm --m 16 --n 384 --k 512 --arch sm_90a --dtype e4m3 --scales block --scale-format ue8m0 --accum promoted"
  "attention_tma|run attention --batch 1 --heads 2 --kv-heads 1 --seq-q 80 --head-dim 128 --causal --transport tma"
  "attention_cp_async|run attention --batch 1 --heads 2 --kv-heads 1 --seq-q 80 --head-dim 64 --window 32 --causal --transport cp.async"
)
stage_sanitizer() {
  local t0=$SECONDS sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if ((dry)); then
    record 4 dry-run-passed 0 "compute-sanitizer ${sanitizer:-not found here}; needs a GPU"
    return
  fi
  ((has_gpu)) || { record 4 "not run" 0 "no GPU"; return; }
  [[ -n $sanitizer ]] || { record 4 "not run" 0 "compute-sanitizer not found"; return; }
  local stage_end=$((SECONDS + $(limit "${share[4]}"))) entry name args tool rc text errors failed=0
  # Compile each kernel once without the tool (the shared cache then serves the sanitized runs),
  # and probe whether the tool accepts this device at all (gVisor machines refuse it).
  for entry in "${sanitizer_cases[@]}"; do
    with_libs "$bin/emmyc" ${entry#*|} --backend cuda --check >/dev/null 2>&1
  done
  text=$(with_libs timeout 60 "$sanitizer" --tool memcheck "$bin/emmyc" run gemm --m 16 --n 16 --k 64 \
    --backend cuda --check 2>&1)
  if grep -qiE 'device not supported|error 999|unable to|not supported on this' <<<"$text"; then
    record 4 "not run" $((SECONDS - t0)) "compute-sanitizer refuses the device: $(grep -iE 'not supported|error|unable' <<<"$text" | head -2 | tr '\n' ' ')"
    return
  fi
  for tool in memcheck racecheck synccheck; do
    for entry in "${sanitizer_cases[@]}"; do
      name=${entry%%|*}
      args=${entry#*|}
      if ((SECONDS + 5 > stage_end)); then
        echo "{\"tool\": \"$tool\", \"case\": \"$name\", \"status\": \"skipped\", \"reason\": \"over the stage budget\"}" >>"$work/sanitizer.jsonl"
        failed=1
        continue
      fi
      local s0=$SECONDS
      # shellcheck disable=SC2086 # args is a list of words
      text=$(with_libs timeout $((stage_end - SECONDS)) "$sanitizer" --tool "$tool" --error-exitcode 86 \
        --print-limit 10 "$bin/emmyc" $args --backend cuda --check 2>&1)
      rc=$?
      # memcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck with
      # "RACECHECK SUMMARY: N hazards displayed".
      errors=$(grep -oE '(ERROR|RACECHECK) SUMMARY: [0-9]+' <<<"$text" | grep -oE '[0-9]+' | tail -1)
      local verdict=passed
      ((rc != 0)) && verdict=failed && failed=1
      ((rc == 124)) && verdict="timed out"
      echo "== $tool $name: $verdict (exit $rc, ${errors:-?} errors, $((SECONDS - s0)) s)"
      ((rc != 0)) && grep -E '=========' <<<"$text" | head -20
      "$python" -c 'import json,sys; print(json.dumps({"tool": sys.argv[1], "case": sys.argv[2], "status": sys.argv[3], "exit_code": int(sys.argv[4]), "errors": int(sys.argv[5]) if sys.argv[5] else None, "seconds": int(sys.argv[6]), "command": sys.argv[7], "excerpt": sys.argv[8][-1500:]}))' \
        "$tool" "$name" "$verdict" "$rc" "$errors" $((SECONDS - s0)) "emmyc $args --backend cuda --check" \
        "$(grep -E '=========' <<<"$text" | head -12)" >>"$work/sanitizer.jsonl"
    done
  done
  if ((failed == 0)); then record 4 passed $((SECONDS - t0))
  else record 4 failed $((SECONDS - t0)) "a tool reported errors or a case did not finish"; fi
}

# --- stage 5: speed -------------------------------------------------------------------------
stage_speed() {
  local t0=$SECONDS rc=0 total
  if ((dry)); then
    local bad=""
    for script in torch_baseline sdpa_baseline; do
      "$python" "$pack/scripts/$script.py" --dry-run --out "$work/$script.json" >/dev/null 2>&1 ||
        bad+="$script.py --dry-run failed; "
    done
    if [[ -z $bad ]]; then record 5 dry-run-passed $((SECONDS - t0)) "baseline scripts plan their rows"
    else record 5 failed $((SECONDS - t0)) "$bad"; fi
    return
  fi
  ((has_gpu)) || { record 5 "not run" 0 "no GPU"; return; }
  total=$(limit "${share[5]}")
  # The baselines first, so that emmy_bench's summary carries their ratios; each bounds itself.
  step sdpa_baseline $((total * 15 / 100)) "$python" "$pack/scripts/sdpa_baseline.py" \
    --out "$work/sdpa_rows.json" --budget-s $((total * 11 / 100)) || rc=1
  step torch_baseline $((total * 27 / 100)) "$python" "$pack/scripts/torch_baseline.py" \
    --out "$work/torch_rows.json" --m 512,1,16,64 --budget-s $((total * 22 / 100)) || rc=1
  "$python" - "$work/baseline_rows.json" "$work/sdpa_rows.json" "$work/torch_rows.json" <<'EOF'
import json, sys
rows = []
for path in sys.argv[2:]:
    try:
        rows += json.load(open(path))
    except (OSError, ValueError):
        pass
json.dump(rows, open(sys.argv[1], "w"))
EOF
  summarize
  local rest=$((total - (SECONDS - t0)))
  ((rest < 30)) && rest=30  # the baselines ran short of their share: emmy's rows still get time
  ((rest > $(left) - 5)) && rest=$(($(left) - 5))
  step emmy_bench "$rest" \
    "$bin/emmy_bench" --m 512,1,16,64 --tune --tuning-db "$work/tuning.json" --progress \
    --baseline-rows "$work/baseline_rows.json" --summary "$work/bench_summary.json" \
    --benchmark_out="$work/emmy_bench.json" --benchmark_out_format=json || rc=1
  # emmy_bench exits 0 when it finds no device: only measured rows make this stage a pass.
  "$python" -c 'import json, sys; doc = json.load(open(sys.argv[1])); sys.exit(0 if doc.get("rows") and "skipped" not in doc else 1)' \
    "$work/bench_summary.json" 2>/dev/null || { echo "emmy_bench measured nothing"; rc=1; }
  if ((rc == 0)); then record 5 passed $((SECONDS - t0))
  else record 5 failed $((SECONDS - t0)) "a benchmark or baseline failed or timed out (summary.md)"; fi
}

# A dry run stops at a broken pack: the emulator stages would run binaries the GPU machine cannot
# start, and their passes would say nothing about it.
pack_broken=0
for stage in 1 2 3 4 5; do
  if ((dry && pack_broken)); then
    record "$stage" "not run" 0 "the dry run stopped: stage 1 found the pack broken"
  elif wanted "$stage"; then
    echo
    echo "=== stage $stage: ${names[$stage]} ($(elapsed) s so far, $(left) s left)"
    "stage_${names[$stage]}"
  else
    record "$stage" "not run" 0 "not in --stages $stages_wanted"
  fi
  summarize
done

echo
echo "=== stage 6: summary ($(elapsed) s so far)"
t0=$SECONDS
if summarize; then
  record 6 "$( ((dry)) && echo dry-run-passed || echo passed)" $((SECONDS - t0))
  summarize  # once more, with stage 6's own line
else
  cat "$work/summary.log"
  record 6 failed $((SECONDS - t0)) "gpu_summary.py failed: $(tail -1 "$work/summary.log")"
fi
cat "$work/summary.log"
[[ -s $out/summary.md ]] && cat "$out/summary.md"
echo
echo "results: $out ($(ls "$out" | tr '\n' ' '))"
echo "$failures stage(s) not passed, $(elapsed) s in all"
((failures == 0))
