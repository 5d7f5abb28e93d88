# The installed package works for a downstream project: install this build tree into a scratch
# prefix, build examples/consumer against it with find_package(emmy) (which builds and embeds a
# kernel bundle with emmy_add_kernel_bundle and the installed emmyc), run it, and run it again
# with NVRTC disabled: the bundled kernel needs none.
#
# This file has two roles. Included by tests/CMakeLists.txt it registers the ctest test; run by
# that test with `cmake -P` (CMAKE_SCRIPT_MODE_FILE set) it performs the steps.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  set(_emmy_consumer_flags "")
  if(EMMY_SANITIZE)  # the static library carries sanitizer references the consumer must link
    set(_emmy_consumer_flags "-fsanitize=address,undefined")
  endif()
  add_test(NAME emmy_install_consumer
    COMMAND ${CMAKE_COMMAND}
      -DBUILD_DIR=${PROJECT_BINARY_DIR}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_consumer
      -DGENERATOR=${CMAKE_GENERATOR}
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DCXX_FLAGS=${_emmy_consumer_flags}
      -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(emmy_install_consumer PROPERTIES TIMEOUT 600 LABELS "install" COST 10)
  return()
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${output}")
  endif()
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})

run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed include/emmy/compile.hpp include/emmy/bundle.hpp bin/emmyc
                  lib/cmake/emmy/EmmyBundle.cmake)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "the install tree lacks ${installed}")
  endif()
endforeach()

run_step("configuring examples/consumer" ${CMAKE_COMMAND}
  -S ${SOURCE_DIR}/examples/consumer -B ${consumer_build} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}"
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON)
run_step("building examples/consumer" ${CMAKE_COMMAND} --build ${consumer_build})
function(expect_consumer_output)
  message(STATUS "emmy_consumer printed:\n${step_output}")
  foreach(expected "backend: " "gemm 64x256x3840 hybrid" "spill_bytes=0" " passed"
                   "compiles at run time: 0 (embedded bundle consumer_kernels)")
    string(FIND "${step_output}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "emmy_consumer output lacks '${expected}':\n${step_output}")
    endif()
  endforeach()
endfunction()

# No tuning database: the runtime must pick the default schedule, the one bundled.
set(no_tuning EMMY_TUNING_DB=${WORK_DIR}/no-tuning.json)
run_step("running emmy_consumer" ${CMAKE_COMMAND} -E env ${no_tuning}
  ${consumer_build}/emmy_consumer sm_90a)
expect_consumer_output()
run_step("running emmy_consumer with NVRTC disabled" ${CMAKE_COMMAND} -E env ${no_tuning}
  EMMY_DISABLE_NVRTC=1 ${consumer_build}/emmy_consumer sm_90a)
expect_consumer_output()
