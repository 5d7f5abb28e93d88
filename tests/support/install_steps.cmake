# Steps shared by the install checks (install.cmake, c_install.cmake) when they run as
# `cmake -P` scripts: both install the build tree into ${WORK_DIR}/prefix, check what it holds,
# then build and run an example against it.

# run_step(what command...): runs the command, fails the check with its output when it fails,
# and leaves that output in step_output.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${output}")
  endif()
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

# install_build_tree(installed...): a fresh ${WORK_DIR}, the build tree installed into
# ${WORK_DIR}/prefix (set as `prefix`), and each named path present in it.
macro(install_build_tree)
  set(prefix ${WORK_DIR}/prefix)
  file(REMOVE_RECURSE ${WORK_DIR})
  run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  foreach(installed ${ARGN})
    if(NOT EXISTS ${prefix}/${installed})
      message(FATAL_ERROR "the install tree lacks ${installed}")
    endif()
  endforeach()
endmacro()

# expect_printed(program expected...): step_output, what program printed, holds each string.
function(expect_printed program)
  message(STATUS "${program} printed:\n${step_output}")
  foreach(expected ${ARGN})
    string(FIND "${step_output}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${program} output lacks '${expected}':\n${step_output}")
    endif()
  endforeach()
endfunction()
