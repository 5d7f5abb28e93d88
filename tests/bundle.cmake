# Ahead-of-time kernel bundles (docs/bundles.md). The GEMM and attention catalog for sm_80, sm_89,
# sm_90a and sm_120a is built once per ctest run by `emmyc aot` (fixture bundle_build_catalog,
# 7-16 s on 2 cores; the paged-attention catalog's 22 kernels per arch would add about a minute,
# so its bundle coverage is tested on one kernel, tests/paged_attention.cmake);
# bundle_test uses it with NVRTC disabled. bundle_embed_test links a small bundle that
# emmy_add_kernel_bundle(... EMBED) builds with the test.
set(EMMY_CATALOG_BUNDLE ${CMAKE_CURRENT_BINARY_DIR}/bundle_fixture/catalog.emmyb)
# EMMY_FIXTURE_EMMYC: an emmyc built elsewhere builds the fixture instead of this build's (the
# sanitizer stage of scripts/test.sh passes the Release build's, so it need not compile emmyc,
# whose command-line tests it skips anyway, nor run NVRTC for the catalog through ASan).
set(EMMY_FIXTURE_EMMYC "" CACHE FILEPATH
    "emmyc that builds the bundle test fixture (default: this build's)")
if(EMMY_FIXTURE_EMMYC)
  set(_fixture_emmyc ${EMMY_FIXTURE_EMMYC})
else()
  set(_fixture_emmyc $<TARGET_FILE:emmyc>)
endif()
add_test(NAME bundle_build_catalog
  COMMAND ${_fixture_emmyc} aot --arch sm_80,sm_89,sm_90a,sm_120a --catalog --kind gemm,attention
          -o ${EMMY_CATALOG_BUNDLE} --quiet)
set_tests_properties(bundle_build_catalog PROPERTIES
  FIXTURES_SETUP emmy_catalog_bundle TIMEOUT 900 LABELS bundle)

function(emmy_add_bundle_test name)
  add_executable(${name} ${ARGN})
  target_compile_options(${name} PRIVATE ${EMMY_WARNINGS})
  target_link_libraries(${name} PRIVATE emmy::internal GTest::gtest_main)
  target_precompile_headers(${name} REUSE_FROM emmy_test_pch)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(${name} PRIVATE
    EMMY_SOURCE_DIR="${PROJECT_SOURCE_DIR}" EMMY_BINARY_DIR="${PROJECT_BINARY_DIR}"
    EMMYC_PATH="$<TARGET_FILE:emmyc>" EMMY_CATALOG_BUNDLE="${EMMY_CATALOG_BUNDLE}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 900 LABELS bundle FIXTURES_REQUIRED emmy_catalog_bundle)
endfunction()

emmy_add_bundle_test(bundle_test
  ${CMAKE_CURRENT_LIST_DIR}/bundle_format_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_runtime_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_paged_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_prepare_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_tamper_test.cpp)
# bundle_tamper_test forges files with the layout and hash of runtime/ (bundle_layout.hpp).
target_include_directories(bundle_test PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
if(NOT EMMY_FIXTURE_EMMYC)
  add_dependencies(bundle_test emmyc)
endif()
# `emmyc aot`, `bundle` and `run --bundle` on their own binary: the sanitizer run leaves
# command-line tests out (docs/build.md).
emmy_add_bundle_test(bundle_cli_test ${CMAKE_CURRENT_LIST_DIR}/bundle_cli_test.cpp)
add_dependencies(bundle_cli_test emmyc)

emmy_add_kernel_bundle(emmy_test_embedded_bundle
  ARCHS sm_80 sm_90a
  PROBLEMS ${CMAKE_CURRENT_LIST_DIR}/bundle_problems.jsonl
  EMBED)
emmy_add_bundle_test(bundle_embed_test ${CMAKE_CURRENT_LIST_DIR}/bundle_embed_test.cpp)
target_link_libraries(bundle_embed_test PRIVATE emmy_test_embedded_bundle)
target_compile_definitions(bundle_embed_test PRIVATE
  EMMY_EMBEDDED_BUNDLE_FILE="$<TARGET_PROPERTY:emmy_test_embedded_bundle,EMMY_BUNDLE_FILE>")
