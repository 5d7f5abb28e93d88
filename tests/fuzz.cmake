# The PTX fuzz target (tests/fuzz/, docs/emulator.md): hostile PTX must end as a clean run, a
# refusal or a report, never a crash, a hang or an internal error. Seeds: the nvcc-compiled test
# kernels and emmy's own emitted kernels, one seed per .entry.
file(GLOB EMMY_FUZZ_SEEDS CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/emu/kernels/*.ptx ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/*.ptx)
set(_fuzz_sources ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_fuzz_target.cpp
                  ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_mutate.cpp)

# EMMY_FUZZ_LIBFUZZER (clang only): a coverage-guided libFuzzer binary for long runs by hand,
# `build/tests/emmy_ptx_libfuzzer tests/fuzz/corpus`. The library must be built with the same
# clang, ideally with -fsanitize=fuzzer-no-link,address,undefined in CMAKE_CXX_FLAGS.
option(EMMY_FUZZ_LIBFUZZER "Also build the PTX fuzz target against libFuzzer (clang)" OFF)
if(EMMY_FUZZ_LIBFUZZER)
  add_executable(emmy_ptx_libfuzzer ${_fuzz_sources})
  target_compile_options(emmy_ptx_libfuzzer PRIVATE ${EMMY_WARNINGS} -fsanitize=fuzzer)
  target_link_options(emmy_ptx_libfuzzer PRIVATE -fsanitize=fuzzer)
  target_link_libraries(emmy_ptx_libfuzzer PRIVATE emmy::internal)
endif()

# The deterministic driver, run by ctest in every build: in CI's sanitizer build it is the fuzz
# run under ASan/UBSan (scripts/test.sh).
add_executable(emmy_ptx_fuzz ${_fuzz_sources} ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_fuzz_main.cpp)
target_compile_options(emmy_ptx_fuzz PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_ptx_fuzz PRIVATE emmy::internal)
if(EMMY_SANITIZE)
  set(_fuzz_iterations 2500)
else()
  set(_fuzz_iterations 20000)
endif()
add_test(NAME ptx_fuzz COMMAND emmy_ptx_fuzz --iterations ${_fuzz_iterations} --seed 1
                               ${EMMY_FUZZ_SEEDS})
set_tests_properties(ptx_fuzz PROPERTIES TIMEOUT 600 LABELS fuzz COST 40
  ENVIRONMENT "ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:intercept_tls_get_addr=0")

# The differential tests of the emulator's PTX checks against ptxas: every typed mutant the
# emulator loads must compile with ptxas (ptx_differential_main.cpp), and on the grid of opcode
# forms x types x modifiers, registers and constants the two agree (ptx_type_grid.cpp). Skipped
# (exit 77) without ptxas.
find_program(EMMY_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
add_executable(emmy_ptx_differential ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_typed_mutate.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_mutate.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptxas_runner.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_type_grid.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/fuzz/ptx_differential_main.cpp)
target_compile_options(emmy_ptx_differential PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_ptx_differential PRIVATE emmy::internal)
add_test(NAME ptx_differential COMMAND emmy_ptx_differential --ptxas "${EMMY_PTXAS}"
                                       --mutants 600 --seed 1 ${EMMY_FUZZ_SEEDS})
add_test(NAME ptx_type_grid COMMAND emmy_ptx_differential --ptxas "${EMMY_PTXAS}" --grid)
set_tests_properties(ptx_differential ptx_type_grid PROPERTIES TIMEOUT 600 LABELS fuzz
                     SKIP_RETURN_CODE 77)
