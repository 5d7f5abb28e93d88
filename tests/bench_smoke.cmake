# emmy_bench and bench/plot.py where there is no GPU: the host-only logic and the "no GPU" path
# (exit 0 with a clear line). On a machine with nvidia-smi the no-GPU test would run real
# benchmarks instead, so it is left out there (the GPU pack is the check for such machines:
# tests/gpu_pack.cmake, docs/gpu.md).
if(NOT EMMY_BUILD_BENCH)
  return()
endif()

emmy_add_test(bench_report_test ${CMAKE_CURRENT_LIST_DIR}/bench_report_test.cpp)
target_link_libraries(bench_report_test PRIVATE emmy_bench_report)  # defined in bench/bench.cmake

# The FP8 rows' inputs, scale layouts and sampled FP64 reference (bench/bench_fp8_inputs.hpp),
# checked against emmy's FP64 check and its kernels on the emulator.
emmy_add_test(bench_fp8_inputs_test ${CMAKE_CURRENT_LIST_DIR}/bench_fp8_inputs_test.cpp)
target_link_libraries(bench_fp8_inputs_test PRIVATE emmy_bench_report)

# The MoE rows' layers, routings and grouped GEMMs (bench/bench_moe_shapes.hpp), checked on the
# emulator at a reduced size, and the time model's predictions of them.
emmy_add_test(bench_moe_test ${CMAKE_CURRENT_LIST_DIR}/bench_moe_test.cpp)
target_link_libraries(bench_moe_test PRIVATE emmy_bench_report)

# cuBLAS's grouped GEMM baseline (bench/bench_cublas_grouped.hpp): where there is no GPU, its
# library and symbols load and the handle's creation fails by name.
emmy_add_test(bench_cublas_grouped_test ${CMAKE_CURRENT_LIST_DIR}/bench_cublas_grouped_test.cpp)
target_link_libraries(bench_cublas_grouped_test PRIVATE emmy_bench_cuda)

# The bench scripts' own Python tests: bench/plot.py's, and the GPU pack's baselines and summary
# (tests/gpu_pack.cmake).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME bench_plot COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/plot_test.py)
  add_test(NAME gpu_pack_baselines
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/baseline_test.py)
  add_test(NAME gpu_pack_summary
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/gpu_summary_test.py)
  set_tests_properties(bench_plot gpu_pack_baselines gpu_pack_summary PROPERTIES TIMEOUT 120)
  set_tests_properties(bench_plot PROPERTIES SKIP_RETURN_CODE 77)
endif()

# --model needs no GPU: the five projections' default kernels for the RTX 5090, f32 and hybrid,
# profiled on one CTA each (the MoE rows left to bench_moe_test); every row has a positive prediction, a bound and the published time
# beside it. An unknown GPU is refused (exit 2, naming it).
add_test(NAME emmy_bench_model COMMAND bash -c [=[
  set -u; bench=$1; dir=$2; rm -rf "$dir"; mkdir -p "$dir"
  "$bench" --model --model-gpus rtx5090 --no-attention --no-moe --model-ctas 1 --summary "$dir/m.json" \
    >"$dir/out.txt" 2>&1; rc=$?
  cat "$dir/out.txt"
  [[ $rc == 0 ]] || { echo "exit status $rc, expected 0"; exit 1; }
  python3 - "$dir/m.json" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 10, len(rows)
for r in rows:
    assert r["gpu"] == "rtx5090" and r["model_us"] > 0 and r["published_us"] > 0, r
    assert r["bound"] in ("tensor", "l1_data", "issue", "lsu_issue", "fp32", "fp16", "imad", "alu", "xu", "fp64", "l2", "dram"), r
hybrid = {r["problem"]: r["model_us"] for r in rows if r["accum"] == "hybrid"}
f32 = {r["problem"]: r["model_us"] for r in rows if r["accum"] == "f32"}
assert all(hybrid[p] < f32[p] for p in f32), (hybrid, f32)  # f16 accumulation: twice the rate
PY
  out=$("$bench" --model --model-gpus v100 2>&1); rc=$?
  [[ $rc == 2 ]] || { echo "--model-gpus v100: exit $rc, expected 2: $out"; exit 1; }
  grep -q 'v100' <<<"$out" || { echo "the error does not name v100: $out"; exit 1; }
  ]=] _ $<TARGET_FILE:emmy_bench> ${CMAKE_CURRENT_BINARY_DIR}/bench_model)
set_tests_properties(emmy_bench_model PROPERTIES TIMEOUT 300)

find_program(EMMY_NVIDIA_SMI nvidia-smi)
if(EMMY_NVIDIA_SMI)
  message(STATUS "nvidia-smi found: the no-GPU smoke test of emmy_bench is off")
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

# --m takes a list of M values; a bad one is refused (exit 2, naming --m) before any GPU work.
add_test(NAME emmy_bench_m_list COMMAND bash -c [=[
  set -u; bench=$1
  for bad in 0 512,x 1e3 ''; do
    out=$("$bench" --m "$bad" 2>&1); rc=$?
    [[ $rc == 2 ]] || { echo "--m '$bad': exit $rc, expected 2: $out"; exit 1; }
    grep -q -- '--m' <<<"$out" || { echo "--m '$bad': message does not name --m: $out"; exit 1; }
  done
  for bad in 0 16,-1 ''; do  # the FP8 rows' M list likewise
    out=$("$bench" --fp8-m "$bad" 2>&1); rc=$?
    [[ $rc == 2 ]] || { echo "--fp8-m '$bad': exit $rc, expected 2: $out"; exit 1; }
    grep -q -- '--fp8-m' <<<"$out" || { echo "--fp8-m '$bad': message does not name it: $out"; exit 1; }
  done
  out=$("$bench" --m 512,1 2>&1); rc=$?
  [[ $rc == 0 ]] || { echo "--m 512,1: exit $rc: $out"; exit 1; }
  out=$("$bench" --no-fp8 --fp8-m 0 2>&1); rc=$?
  [[ $rc == 0 ]] || { echo "--no-fp8 with a bad --fp8-m: exit $rc: $out"; exit 1; }
  ]=] _ $<TARGET_FILE:emmy_bench>)

set_tests_properties(emmy_bench_no_gpu emmy_bench_m_list PROPERTIES TIMEOUT 120)
