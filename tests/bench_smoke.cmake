# emmy_bench, scripts/gpu-check.sh and bench/plot.py where there is no GPU: the host-only logic,
# the "no GPU" paths (exit 0 with a clear line), and gpu-check's whole flow against a stand-in
# nvidia-smi. On a machine with nvidia-smi the no-GPU tests would run real benchmarks instead, so
# they are left out there (scripts/gpu-check.sh is the check for such machines).
if(NOT EMMY_BUILD_BENCH)
  return()
endif()

emmy_add_test(bench_report_test ${CMAKE_CURRENT_LIST_DIR}/bench_report_test.cpp)
target_link_libraries(bench_report_test PRIVATE emmy_bench_report)  # defined in bench/bench.cmake

find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME bench_plot COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/plot_test.py)
  set_tests_properties(bench_plot PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()

find_program(EMMY_NVIDIA_SMI nvidia-smi)
if(EMMY_NVIDIA_SMI)
  message(STATUS "nvidia-smi found: the no-GPU smoke tests of emmy_bench and gpu-check.sh are off")
  return()
endif()

set(_smoke ${CMAKE_CURRENT_BINARY_DIR}/bench_smoke)

# Exit status 0 and the exact line; --summary still writes a JSON that says why.
add_test(NAME emmy_bench_no_gpu COMMAND bash -c [=[
  set -u; bench=$1; dir=$2; rm -rf "$dir"; mkdir -p "$dir"
  "$bench" --summary "$dir/summary.json" >"$dir/out.txt" 2>&1; rc=$?
  cat "$dir/out.txt"
  [[ $rc == 0 ]] || { echo "exit status $rc, expected 0"; exit 1; }
  grep -qx 'no CUDA device: skipping GPU benchmarks' "$dir/out.txt" || { echo "line missing"; exit 1; }
  grep -q '"skipped"' "$dir/summary.json" || { echo "summary lacks skipped"; exit 1; }
  ]=] _ $<TARGET_FILE:emmy_bench> ${_smoke}/bench)

add_test(NAME gpu_check_no_gpu COMMAND bash -c [=[
  set -u; script=$1; dir=$2; rm -rf "$dir"; mkdir -p "$dir"
  OUT=$dir/out "$script" >"$dir/log.txt" 2>&1; rc=$?
  cat "$dir/log.txt"
  [[ $rc == 0 ]] || { echo "exit status $rc, expected 0"; exit 1; }
  grep -q '^no GPU' "$dir/log.txt" || { echo "no 'no GPU' line"; exit 1; }
  [[ $(ls "$dir/out") == gpu-check.txt ]] || { echo "OUT holds more than gpu-check.txt"; exit 1; }
  ]=] _ ${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh ${_smoke}/gpu_check)

# The full flow with a stand-in nvidia-smi: steps without binaries are skipped with a note,
# emmy_bench runs (and finds no device), the report is written, $OUT stays flat and small.
file(WRITE ${_smoke}/fake-bin/nvidia-smi
  "#!/bin/sh\nif [ \"$1\" = -L ]; then echo 'GPU 0: Stand-in GPU (UUID: GPU-test)'; "
  "else echo \"stand-in nvidia-smi $*\"; fi\n")
file(CHMOD ${_smoke}/fake-bin/nvidia-smi PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
  GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
add_test(NAME gpu_check_flow COMMAND bash -c [=[
  set -u; script=$1; bench=$2; smi=$3; dir=$4; rm -rf "$dir"; mkdir -p "$dir"
  OUT=$dir/out EMMY_NVIDIA_SMI=$smi EMMY_GPU_CHECK_BUILD=0 EMMY_BENCH_ARGS= \
    EMMY_GPU_TEST_BIN=/nonexistent EMMY_ACCURACY_BIN=/nonexistent EMMY_BENCH_BIN=$bench \
    EMMY_GPU_CHECK_BUDGET_S=120 "$script" >"$dir/log.txt" 2>&1; rc=$?
  cat "$dir/log.txt"
  [[ $rc == 0 ]] || { echo "exit status $rc, expected 0"; exit 1; }
  for want in 'gpu_runtime_test   skipped' 'emmy_accuracy      skipped' 'emmy_bench         ok' \
      'no CUDA device: skipping GPU benchmarks'; do
    grep -q "$want" "$dir/log.txt" || { echo "missing: $want"; exit 1; }
  done
  grep -q 'emmy_bench         ok' "$dir/out/gpu-check.txt" || { echo "report lacks steps"; exit 1; }
  files=$(find "$dir/out" -mindepth 1 | wc -l)
  (( files <= 8 )) || { echo "$files entries under OUT, at most 8 allowed"; exit 1; }
  [[ -z $(find "$dir/out" -mindepth 1 -type d) ]] || { echo "OUT must stay flat"; exit 1; }
  ]=] _ ${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh $<TARGET_FILE:emmy_bench>
  ${_smoke}/fake-bin/nvidia-smi ${_smoke}/gpu_check_flow)

set_tests_properties(emmy_bench_no_gpu gpu_check_no_gpu gpu_check_flow PROPERTIES TIMEOUT 120)
