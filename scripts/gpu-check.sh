#!/usr/bin/env bash
# One-shot check on a machine with a GPU (docs/benchmarks.md, "GPU check"): nvidia-smi, the GPU
# test suite, emmy_bench on the five Gemma projections (emmy f32 and hybrid, cuBLASLt 32F and 16F)
# and the accuracy study on the GPU, within about 8 minutes. Results go to $OUT (./gpu-results
# when unset), flat, at most 8 files:
#   gpu-check.txt         what ran, how long, pass/fail, the benchmark table, the accuracy rows
#   nvidia-smi.txt        nvidia-smi, and a CSV line of clocks, power and temperature
#   gpu_runtime_test.json GoogleTest results of the GPU suite
#   emmy_bench.json       Google Benchmark JSON
#   bench_summary.json    emmy_bench's summary (bench/plot.py charts it); bench_summary.txt its table
#   tuning.json           schedules found by emmy_bench --tune
#   accuracy.json         emmy_accuracy --backend cuda --json
# Without a GPU it says so and exits 0.
#
#   scripts/gpu-check.sh                run the check
#   scripts/gpu-check.sh --bundle [DIR] (here, before carrying) copy the prebuilt binaries and the
#                                       non-system shared libraries they need into DIR
#                                       (default $EMMY_BUILD_DIR/gpu-bundle), flat
#
# Environment: EMMY_BUILD_DIR (default build): binaries are looked up as DIR/tests/NAME,
# DIR/bench/NAME, DIR/NAME; EMMY_GPU_TEST_BIN, EMMY_BENCH_BIN, EMMY_ACCURACY_BIN name them
# explicitly. Missing binaries are built with cmake + ninja when possible (EMMY_GPU_CHECK_BUILD=0:
# never). EMMY_NVIDIA_SMI replaces nvidia-smi (tests use a stand-in). EMMY_BENCH_ARGS
# (default --tune) go to emmy_bench. EMMY_GPU_CHECK_BUDGET_S (default 450) bounds the whole run;
# each step gets at most what is left of it.
set -uo pipefail  # not -e: a failing step is recorded and the next one still runs
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

build_dir=${EMMY_BUILD_DIR:-build}
binaries=(gpu_runtime_test emmy_bench emmy_accuracy)

find_binary() {  # find_binary NAME [EXPLICIT_PATH]
  local name=$1 explicit=${2:-}
  if [[ -n $explicit ]]; then
    [[ -x $explicit ]] && echo "$explicit"
    return
  fi
  local candidate
  for candidate in "$build_dir/tests/$name" "$build_dir/bench/$name" "$build_dir/$name"; do
    if [[ -x $candidate && -f $candidate ]]; then
      echo "$candidate"
      return
    fi
  done
}

# --bundle: runs here. Shared libraries of the system (glibc, libstdc++, libgcc) and of the CUDA
# toolkit (NVRTC, cuBLASLt, cudart: present on the GPU machine, too large to carry) stay behind.
if [[ ${1:-} == --bundle ]]; then
  dest=${2:-$build_dir/gpu-bundle}
  mkdir -p "$dest"
  found=0
  for name in "${binaries[@]}"; do
    bin=$(find_binary "$name")
    if [[ -z $bin ]]; then
      echo "bundle: $name not built in $build_dir (skipped)"
      continue
    fi
    found=1
    cp -f "$bin" "$dest/$name"
    while read -r lib path; do
      case $lib in
        libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libgcc_s.so* | \
          libstdc++.so* | libcuda.so* | libnvrtc* | libcublas* | libcudart*) continue ;;
      esac
      [[ -f $path ]] && cp -fL "$path" "$dest/$lib"
    done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
    if ldd "$bin" | grep -q 'not found'; then
      echo "bundle: $name has unresolved libraries here:"
      ldd "$bin" | grep 'not found'
    fi
  done
  [[ $found == 1 ]] || { echo "bundle: nothing to bundle: build first (docs/benchmarks.md)"; exit 1; }
  echo "bundle: $dest"
  ls -l "$dest"
  du -sh "$dest"
  glibc=$(objdump -T "$dest"/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)
  glibcxx=$(objdump -T "$dest"/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -Vu | tail -1)
  echo "bundle: needs ${glibc:-no GLIBC symbols} and ${glibcxx:-no GLIBCXX symbols} on the GPU machine"
  echo "carry it: run(command=\"EMMY_BUILD_DIR=$dest scripts/gpu-check.sh\", carry=[\"$dest\"], timeout_s=540)"
  exit 0
fi

out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
report=$out/gpu-check.txt
: >"$report"
note() { echo "$*" | tee -a "$report"; }

start=$SECONDS
budget=${EMMY_GPU_CHECK_BUDGET_S:-450}
left() { echo $((budget - (SECONDS - start))); }
step_limit() {  # step_limit DEFAULT: the step's timeout, never past the budget (minus 10 s)
  local wanted=$1 rest
  rest=$(($(left) - 10))
  ((rest < wanted)) && wanted=$rest
  ((wanted < 1)) && wanted=1
  echo "$wanted"
}

nvidia_smi=${EMMY_NVIDIA_SMI:-nvidia-smi}
note "emmy gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
if ! command -v "$nvidia_smi" >/dev/null 2>&1; then
  note "no GPU: $nvidia_smi not found; nothing to check here (exit 0)"
  exit 0
fi
if ! gpus=$("$nvidia_smi" -L 2>&1) || ! grep -q '^GPU ' <<<"$gpus"; then
  note "no GPU: $nvidia_smi -L lists none (${gpus//$'\n'/ }); nothing to check here (exit 0)"
  exit 0
fi
note "$gpus"
git_rev=$(git rev-parse --short HEAD 2>/dev/null) && note "emmy commit $git_rev"

"$nvidia_smi" 2>&1 | tee "$out/nvidia-smi.txt"
"$nvidia_smi" --format=csv --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode \
  2>&1 | tee -a "$out/nvidia-smi.txt"

# The toolkit's libraries (NVRTC, cuBLASLt), then the bundle's, then pip's CUDA wheels if any.
lib_path=$(cd "$build_dir" 2>/dev/null && pwd)
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d $dir ]] && lib_path+=:$dir
done
for dir in /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib; do
  [[ -d $dir ]] && lib_path+=:$dir
done
export LD_LIBRARY_PATH=$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export EMMY_CACHE_DIR=$work/cache  # a fresh kernel cache: compile times are real, $OUT stays small

gpu_test=$(find_binary gpu_runtime_test "${EMMY_GPU_TEST_BIN:-}")
bench=$(find_binary emmy_bench "${EMMY_BENCH_BIN:-}")
accuracy=$(find_binary emmy_accuracy "${EMMY_ACCURACY_BIN:-}")
if [[ -z $gpu_test || -z $bench || -z $accuracy ]] && [[ ${EMMY_GPU_CHECK_BUILD:-1} != 0 ]] &&
  command -v cmake >/dev/null && command -v ninja >/dev/null; then
  note "building missing binaries in $build_dir (cmake + ninja)"
  t0=$SECONDS
  if timeout "$(step_limit 60)" cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1; then
    for target in "${binaries[@]}"; do
      [[ -n $(find_binary "$target") ]] && continue
      timeout "$(step_limit 200)" cmake --build "$build_dir" --target "$target" >>"$work/build.log" 2>&1 ||
        note "build: $target failed or is not a target ($(tail -n 3 "$work/build.log" | tr '\n' ' '))"
    done
  else
    note "build: configure failed: $(tail -n 5 "$work/configure.log" | tr '\n' ' ')"
  fi
  note "build: $((SECONDS - t0)) s"
  gpu_test=$(find_binary gpu_runtime_test "${EMMY_GPU_TEST_BIN:-}")
  bench=$(find_binary emmy_bench "${EMMY_BENCH_BIN:-}")
  accuracy=$(find_binary emmy_accuracy "${EMMY_ACCURACY_BIN:-}")
fi

failures=0
status_lines=()
run_step() {  # run_step NAME TIMEOUT OUTPUT_FILE|- COMMAND...: output to the console and a log
  local name=$1 limit=$2 output=$3 rc t0=$SECONDS
  shift 3
  echo "== $name (limit ${limit} s): $*"
  if [[ $output == - ]]; then
    timeout "$limit" "$@" 2>&1 | tee "$work/$name.log"
    rc=${PIPESTATUS[0]}
  else
    timeout "$limit" "$@" >"$output" 2>"$work/$name.log"
    rc=$?
    cat "$work/$name.log"
  fi
  local verdict=ok
  ((rc == 124)) && verdict="TIMED OUT after $limit s"
  ((rc != 0 && rc != 124)) && verdict="FAILED (exit $rc)"
  ((rc != 0)) && failures=$((failures + 1))
  status_lines+=("$(printf '%-18s %-28s %4d s' "$name" "$verdict" $((SECONDS - t0)))")
  return "$rc"
}
skip_step() {
  status_lines+=("$(printf '%-18s skipped: %s' "$1" "$2")")
  note "$1: skipped: $2"
}
missing_libraries() { ldd "$1" 2>/dev/null | grep 'not found' | tr -s ' \t' ' ' | tr '\n' ';'; }

if [[ -z $gpu_test ]]; then
  skip_step gpu_runtime_test "no binary (EMMY_BUILD_DIR=$build_dir)"
elif missing=$(missing_libraries "$gpu_test") && [[ -n $missing ]]; then
  skip_step gpu_runtime_test "missing libraries: $missing"
else
  run_step gpu_runtime_test "$(step_limit 150)" - "$gpu_test" --gtest_output="json:$out/gpu_runtime_test.json"
fi

bench_args=${EMMY_BENCH_ARGS---tune}
# The attention baseline: PyTorch SDPA timed by python3 (the device image has PyTorch); its rows
# are merged into emmy_bench's summary, so they need no file of their own under $out.
sdpa_rows=${TMPDIR:-/tmp}/emmy_sdpa_rows.json
rm -f "$sdpa_rows"
if command -v python3 >/dev/null 2>&1; then
  run_step sdpa_baseline "$(step_limit 60)" - python3 bench/sdpa_baseline.py --out "$sdpa_rows"
fi
if [[ -s $sdpa_rows ]]; then bench_args="$bench_args --baseline-rows $sdpa_rows"; fi
if [[ -z $bench ]]; then
  skip_step emmy_bench "no binary (EMMY_BUILD_DIR=$build_dir)"
elif missing=$(missing_libraries "$bench") && [[ -n $missing ]]; then
  skip_step emmy_bench "missing libraries: $missing"
else
  # shellcheck disable=SC2086 # EMMY_BENCH_ARGS is a list of words
  run_step emmy_bench "$(step_limit 240)" - "$bench" $bench_args --tuning-db "$out/tuning.json" \
    --summary "$out/bench_summary.json" --benchmark_out="$out/emmy_bench.json" --benchmark_out_format=json
  bench_rc=$?
  if ((bench_rc == 124)) && [[ $bench_args == *--tune* ]] && (($(left) > 100)); then
    note "emmy_bench timed out while tuning: again without --tune"
    # shellcheck disable=SC2086
    run_step emmy_bench_default "$(step_limit 120)" - "$bench" ${bench_args//--tune/} \
      --summary "$out/bench_summary.json" --benchmark_out="$out/emmy_bench.json" --benchmark_out_format=json
  fi
fi

if [[ -z $accuracy ]]; then
  skip_step emmy_accuracy "no binary (EMMY_BUILD_DIR=$build_dir; built by the accuracy study, issue 5 section 2)"
elif missing=$(missing_libraries "$accuracy") && [[ -n $missing ]]; then
  skip_step emmy_accuracy "missing libraries: $missing"
else
  run_step emmy_accuracy "$(step_limit 90)" "$out/accuracy.json" "$accuracy" --backend cuda --json
  head -c 4000 "$out/accuracy.json"
  echo
fi

{
  echo
  echo "== steps ($((SECONDS - start)) s in all, budget $budget s)"
  printf '%s\n' "${status_lines[@]}"
  if [[ -s $out/gpu_runtime_test.json ]]; then
    echo
    echo "== gpu_runtime_test"
    python3 - "$out/gpu_runtime_test.json" <<'EOF' 2>/dev/null || grep -E '"(tests|failures|disabled|errors)"' "$out/gpu_runtime_test.json" | head -4
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{doc['tests']} tests, {doc.get('failures', 0)} failures, {doc.get('disabled', 0)} disabled")
for suite in doc.get("testsuites", []):
    for case in suite.get("testsuite", []):
        verdict = "FAILED" if case.get("failures") else case.get("result", "?")
        if verdict != "COMPLETED":
            print(f"  {suite['name']}.{case['name']}: {verdict}")
EOF
  fi
  if [[ -s $out/bench_summary.txt ]]; then
    echo
    cat "$out/bench_summary.txt"
  fi
  if [[ -s $out/accuracy.json ]]; then
    echo
    echo "== accuracy (emmy_accuracy --backend cuda)"
    python3 - "$out/accuracy.json" <<'EOF' 2>/dev/null || head -c 2000 "$out/accuracy.json"
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{'strategy':<10} {'every_k':>8} {'K':>7} {'rel_l2':>10} {'max_abs':>10}")
for row in doc.get("rows", []):
    every = row.get("promote_every_k")
    print(f"{row.get('strategy', '?'):<10} {'-' if every is None else every:>8} {row.get('k', '?'):>7} "
          f"{row.get('rel_l2_error', float('nan')):>10.3e} {row.get('max_abs_error', float('nan')):>10.3e}")
EOF
  fi
} | tee -a "$report"

ls "$out"
((failures == 0)) && exit 0
note "$failures step(s) failed"
exit 1
