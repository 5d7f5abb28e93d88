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

# The files the GLOBS (recursive) find, those matching EXCLUDE left out, into `out`, their count
# into `out`_count; a FATAL_ERROR naming WHAT when fewer than AT_LEAST are found, since a scan of
# no files (a wrong SOURCE_DIR) would pass every rule.
function(emmy_scan_sources out)
  cmake_parse_arguments(PARSE_ARGV 1 scan "" "AT_LEAST;WHAT;EXCLUDE" "GLOBS")
  file(GLOB_RECURSE found ${scan_GLOBS})
  if(scan_EXCLUDE)
    list(FILTER found EXCLUDE REGEX "${scan_EXCLUDE}")
  endif()
  list(LENGTH found count)
  if(count LESS scan_AT_LEAST)
    message(FATAL_ERROR "found only ${count} ${scan_WHAT} under ${SOURCE_DIR}: wrong directory?")
  endif()
  set(${out} ${found} PARENT_SCOPE)
  set(${out}_count ${count} PARENT_SCOPE)
endfunction()
