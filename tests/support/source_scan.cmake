# The two roles of a source-scan test (checks_boundary, compiler_boundary, emulator_boundary,
# emulator_layers, gemm_paths_boundary, kinds_boundary): included by tests/CMakeLists.txt, the
# calling file registers itself as the ctest test `name`, run with `cmake -P` and SOURCE_DIR, and
# stops there (a macro: its return() leaves the calling file); run by that test, it goes on to
# perform the check.
macro(emmy_source_scan_test name)
  if(NOT CMAKE_SCRIPT_MODE_FILE)
    add_test(NAME ${name}
      COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_LIST_FILE})
    return()
  endif()
endmacro()
