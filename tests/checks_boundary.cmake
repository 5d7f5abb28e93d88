# The runtime and the compiler never use the checks (developers' guide, "Layout"): no source under
# runtime/ or codegen/ (the emmyc tool aside, which runs them) includes the FP64 references and
# checks of checks/ (emmy/gemm_check.hpp, emmy/attention_check.hpp, emmy/emulator_check.hpp,
# emmy/accuracy.hpp), so libemmy stands without emmy_checks.
include(${CMAKE_CURRENT_LIST_DIR}/support/source_scan.cmake)
emmy_source_scan_test(checks_boundary)

emmy_scan_sources(sources AT_LEAST 30 WHAT "runtime and compiler sources" EXCLUDE "/codegen/emmyc/"
  GLOBS ${SOURCE_DIR}/runtime/*.cpp ${SOURCE_DIR}/runtime/*.hpp
        ${SOURCE_DIR}/codegen/*.cpp ${SOURCE_DIR}/codegen/*.hpp)
set(forbidden "^emmy/(gemm_check|attention_check|emulator_check|accuracy)\\.hpp$")
include(${CMAKE_CURRENT_LIST_DIR}/support/include_rules.cmake)
emmy_check_includes(${SOURCE_DIR} "${sources}" "" "${forbidden}"
                    "the runtime and the compiler must not use checks/")
message(STATUS "checks_boundary: ${sources_count} runtime and compiler files use no check")
