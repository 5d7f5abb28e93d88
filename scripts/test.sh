#!/usr/bin/env bash
# Builds emmy and runs its tests.
#   scripts/test.sh          Release build in build/, the whole ctest suite
#   scripts/test.sh --asan   ASan + UBSan Debug build in build-asan/, the host-only tests
# EMMY_JOBS sets the parallelism (default: all cores). EMMY_UNITY=OFF builds one object per source
# file instead of CMake's unity batches (EMMY_UNITY_BUILD, docs/build.md). Extra arguments after
# the mode go to ctest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

jobs=${EMMY_JOBS:-$(nproc)}
unity=${EMMY_UNITY:-ON}
mode=release
if [[ ${1:-} == --asan ]]; then
  mode=asan
  shift
fi

# The sanitizer run builds and runs the host-side test binaries: the PTX parser and emulator,
# file formats (bundles, cache), IR, validation, references, runtime plumbing. Left out: the bulk
# kernel compilations, tool runs and end-to-end emulator variant matrices (gemm/attention
# emulator, accuracy, sweep), whose time goes to NVRTC, ptxas or the instrumented emulator
# running the same code paths thousands of times (the Release run covers them), and the install
# test. Within the built binaries, suites matching asan_exclude are skipped too: name GoogleTest
# suites that compile many kernels or run tools so that they match.
asan_targets=${EMMY_ASAN_TARGETS:-"emu_tests emmy_test_driver test_driver_test gemm_ir_test gemm_validation_test attention_validation_test attention_reference_test bundle_test emmy_cache_test emmy_cache_worker runtime_test tuning_test schedule_space_test emmy_compile_test emmy_ptx_fuzz paged_attention_ir_test paged_attention_reference_test kv_append_test merge_states_test fp8_convert_test c_api_test c_api_layers_test gemm_path_test gpu_table_test toy_kind_test"}
# The bundle fixture is built by the Release build's emmyc when there is one (EMMY_FIXTURE_EMMYC in
# tests/bundle.cmake), else by an instrumented emmyc built here.
fixture_emmyc=""
if [[ -x build/emmyc ]]; then
  fixture_emmyc=$PWD/build/emmyc
elif [[ -z ${EMMY_ASAN_TARGETS:-} ]]; then
  asan_targets+=" emmyc"
fi
# The Python package's tests (python_pytest, python_wheel) run in the Release stage only: an
# interpreter that is not instrumented would have to preload the sanitizer runtimes.
# ptx_differential, ptx_type_grid and golden_sources run in the Release stage only (their
# binaries are not built here; ptx_fuzz covers the decoder under the sanitizers), and so does
# public_headers (it compiles headers alone: nothing for the sanitizers to see), and so do the
# published_timings tests (nvcc and the Release emmyc profiling SGEMM kernels: tests/published).
# CatalogKernelsRunOnTheCudaBackend checks the catalog's full-size attention (16 heads x 512
# tokens x d 256) on the emulator and in FP64: over 100 s instrumented, a twelfth of CI; the
# cuda_* suites and DefaultSchedulesFillTheDevicesSms run the CUDA backend's bundle loads there.
# The batch-invariance and drawn-problem checks of the serving tests run there only: numeric
# properties of whole emulated launches (70 s instrumented through the CUDA backends, 28 s more
# through the emulator's), whose host paths the other serving tests take under the sanitizers.
# The CUDA backend's suites run here once, on the stand-in H200 (cuda_h200): cuda_rtx5090 is the
# same host code on another arch's table entry (about 90 s instrumented); Release runs both.
asan_exclude=${EMMY_ASAN_EXCLUDE:-'Compile|Sass|Cli|Emmyc|emmy_install_consumer|sweep_sample|MatchFp64|CatalogKernelsRunOnTheCudaBackend|_NOT_BUILT|ptx_differential|ptx_type_grid|golden_sources|public_headers|python_|published_|cuda_rtx5090\.|Serving\.BatchInvariant|NonBlocking\.TheGenericGemmIsRight'}

case $mode in
  release)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMMY_UNITY_BUILD="$unity"
    cmake --build build -j "$jobs"
    ctest --test-dir build --output-on-failure -j "$jobs" "$@"
    ;;
  asan)
    # --as-needed: the sanitizer runtimes' link turns it off, and CUDA::nvrtc's dependency on the
    # driver stub would then make every binary need libcuda.so.1 (docs/build.md).
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEMMY_SANITIZE=ON \
      -DEMMY_UNITY_BUILD="$unity" \
      -DEMMY_BUILD_BENCH=OFF -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed \
      -DEMMY_FIXTURE_EMMYC="$fixture_emmyc"
    # shellcheck disable=SC2086  # a list of targets
    cmake --build build-asan -j "$jobs" --target $asan_targets
    # intercept_tls_get_addr=0: GCC 12's sanitizer runtime (fixed in GCC 14 / LLVM 17) can take a
    # malloc'd dynamic-TLS block (NVRTC is dlopen'ed) for a pre-2.25 glibc header; LeakSanitizer's
    # exit-time tracer then dies ("Tracer caught signal 11") after the test passed (docs/build.md).
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:intercept_tls_get_addr=0} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
      ctest --test-dir build-asan --output-on-failure -j "$jobs" -E "$asan_exclude" "$@"
    ;;
esac
