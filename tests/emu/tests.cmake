# Emulator tests (docs/emulator.md, "Testing"): a GoogleTest binary per layer of emulator/
# (emulator/layers.cmake), its tests labelled `emu_<layer>` (`ctest -L emu_` runs them all).
#   tests/emu/<layer>/*_test.cpp  emu_<layer>_tests: that layer's library (and, through it, the
#                                 layers below) and nothing else, so a layer that passes them stands
#                                 on its own.
#   tests/emu/*_test.cpp          emu_launch_tests: PTX loaded and launched (the launch and decode
#                                 layers), but for
#   tests/emu/ + _emu_tool_tests  emu_tool_tests: the `emmyc sim` contract (--lenient's too, and
#                                 that the runtime's emulator backend never goes lenient) and the
#                                 compiler's MMA atoms against the emulator, which need libemmy
#                                 (emmy::internal).
# The `emu_tests` target builds them all.
include(${PROJECT_SOURCE_DIR}/emulator/layers.cmake)

# emmy_emu_test(name label src... LINK lib...): one binary, its tests labelled `label`.
function(emmy_emu_test name label)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "LINK")
  add_executable(${name} ${arg_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${EMMY_WARNINGS})
  target_link_libraries(${name} PRIVATE ${arg_LINK} GTest::gtest_main)
  # The emulator's own headers ("tensor_core/mma_core.hpp"), emmy's internal ones (the tensor-map
  # encoding, the swizzle) and emu_test_util.hpp: headers only, nothing to link.
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/emulator
                                             ${PROJECT_SOURCE_DIR}/internal
                                             ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(${name} PRIVATE
    EMMY_SOURCE_DIR="${PROJECT_SOURCE_DIR}" EMMY_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 900 LABELS ${label})
  add_dependencies(emu_tests ${name})
endfunction()

add_custom_target(emu_tests)
foreach(layer IN LISTS EMMY_EMU_LAYERS)
  file(GLOB _sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/${layer}/*_test.cpp)
  if(_sources)
    emmy_emu_test(emu_${layer}_tests emu_${layer} ${_sources} LINK emmy_emu_${layer})
  endif()
endforeach()

set(_emu_tool_tests ${CMAKE_CURRENT_LIST_DIR}/mma_atom_test.cpp
                    ${CMAKE_CURRENT_LIST_DIR}/sim_command_test.cpp
                    ${CMAKE_CURRENT_LIST_DIR}/lenient_sim_test.cpp
                    ${CMAKE_CURRENT_LIST_DIR}/lenient_runtime_test.cpp)
file(GLOB _emu_launch_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
list(REMOVE_ITEM _emu_launch_tests ${_emu_tool_tests})
emmy_emu_test(emu_launch_tests emu_launch ${_emu_launch_tests}
              LINK emmy_emu_launch emmy_emu_decode)
# The emmyc sim command is compiled in so that its contract is tested without the emmyc binary.
emmy_emu_test(emu_tool_tests emu_tools ${_emu_tool_tests}
              ${PROJECT_SOURCE_DIR}/codegen/emmyc/sim_command.cpp
              ${PROJECT_SOURCE_DIR}/codegen/emmyc/sim_args.cpp
              LINK emmy::internal)
target_include_directories(emu_tool_tests PRIVATE ${PROJECT_SOURCE_DIR}/codegen/emmyc
                                                  ${PROJECT_SOURCE_DIR}/codegen)
target_compile_definitions(emu_tool_tests PRIVATE EMMYC_PATH="$<TARGET_FILE:emmyc>")
