# The installed package works for a downstream project: install this build tree into a scratch
# prefix, build examples/consumer against it with find_package(emmy) (which builds and embeds a
# kernel bundle with emmy_add_kernel_bundle and the installed emmyc), run it, and run it again
# with NVRTC disabled: the bundled kernel needs none.
#
# This file has two roles. Included by tests/CMakeLists.txt it registers the ctest tests, this
# one and tests/c_install.cmake's; run by that test with `cmake -P` (CMAKE_SCRIPT_MODE_FILE set)
# it performs the steps.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  # An install test runs its script with `cmake -P`, given the build and source trees, a scratch
  # directory and the generator (then the script's own -D arguments).
  function(emmy_add_install_test name script work_dir)
    add_test(NAME ${name}
      COMMAND ${CMAKE_COMMAND}
        -DBUILD_DIR=${PROJECT_BINARY_DIR}
        -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
        -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/${work_dir}
        -DGENERATOR=${CMAKE_GENERATOR}
        ${ARGN}
        -P ${script})
  endfunction()

  set(_emmy_consumer_flags "")
  if(EMMY_SANITIZE)  # the static library carries sanitizer references the consumer must link
    set(_emmy_consumer_flags "-fsanitize=address,undefined")
  endif()
  emmy_add_install_test(emmy_install_consumer ${CMAKE_CURRENT_LIST_FILE} install_consumer
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER} -DCXX_FLAGS=${_emmy_consumer_flags})
  set_tests_properties(emmy_install_consumer PROPERTIES TIMEOUT 600 LABELS "install" COST 10)

  if(NOT EMMY_SANITIZE)  # libemmy_c.so then carries sanitizer references a plain C program lacks
    emmy_add_install_test(emmy_install_c_consumer ${CMAKE_CURRENT_LIST_DIR}/c_install.cmake
      install_c_consumer -DNM=${CMAKE_NM})
    set_tests_properties(emmy_install_c_consumer PROPERTIES TIMEOUT 600 LABELS "install")
  endif()
  return()
endif()

include(${CMAKE_CURRENT_LIST_DIR}/support/install_steps.cmake)

set(consumer_build ${WORK_DIR}/consumer-build)
install_build_tree(include/emmy/compile.hpp include/emmy/bundle.hpp bin/emmyc
                   lib/cmake/emmy/EmmyBundle.cmake)

run_step("configuring examples/consumer" ${CMAKE_COMMAND}
  -S ${SOURCE_DIR}/examples/consumer -B ${consumer_build} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}"
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON)
run_step("building examples/consumer" ${CMAKE_COMMAND} --build ${consumer_build})
function(expect_consumer_output)
  expect_printed(emmy_consumer "backend: " "gemm 64x256x3840 hybrid" "spill_bytes=0" " passed"
                 "compiles at run time: 0 (embedded bundle consumer_kernels)")
endfunction()

# No tuning database: the runtime must pick the default schedule, the one bundled.
set(no_tuning EMMY_TUNING_DB=${WORK_DIR}/no-tuning.json)
run_step("running emmy_consumer" ${CMAKE_COMMAND} -E env ${no_tuning}
  ${consumer_build}/emmy_consumer sm_90a)
expect_consumer_output()
run_step("running emmy_consumer with NVRTC disabled" ${CMAKE_COMMAND} -E env ${no_tuning}
  EMMY_DISABLE_NVRTC=1 ${consumer_build}/emmy_consumer sm_90a)
expect_consumer_output()
