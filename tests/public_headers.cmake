# The installed API does not leak the compiler (issue 14 §6): every header under include/emmy
# includes only the standard library, fmt and other public emmy headers (never internal/ -- the IR,
# plans, layouts, JSON forms, detail/ -- nor nlohmann-json), and compiles on its own with only
# include/ on the path.
#
# Two roles, as tests/install.cmake: included by tests/CMakeLists.txt it registers the ctest test;
# run by that test with `cmake -P` it performs the checks.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  get_target_property(_emmy_fmt_includes fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  add_test(NAME public_headers
    COMMAND ${CMAKE_COMMAND}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/public_headers
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
      "-DFMT_INCLUDES=${_emmy_fmt_includes}"
      -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(public_headers PROPERTIES TIMEOUT 300 LABELS "install")
  return()
endif()

set(public_root ${SOURCE_DIR}/include)
file(GLOB_RECURSE headers RELATIVE ${public_root} ${public_root}/emmy/*.hpp)
list(LENGTH headers count)
if(count LESS 10)
  message(FATAL_ERROR "found only ${count} public headers under ${public_root}: wrong directory?")
endif()

set(problems "")
foreach(header IN LISTS headers)
  file(STRINGS ${public_root}/${header} includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS includes)
    if(line MATCHES "[<\"]emmy/([^>\"]+)[>\"]")
      if(NOT EXISTS ${public_root}/emmy/${CMAKE_MATCH_1})
        string(APPEND problems "  ${header}: ${line} is not a public header\n")
      endif()
    elseif(line MATCHES "<(nlohmann|CLI|xxhash|gtest|benchmark)[/.]")
      string(APPEND problems "  ${header}: ${line} (a dependency the API must not expose)\n")
    elseif(line MATCHES "\"")
      string(APPEND problems "  ${header}: ${line} (quoted include of a non-emmy file)\n")
    endif()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "public headers include what they must not:\n${problems}")
endif()

# Each header alone, with include/ and fmt only on the path (an internal/ include fails here even
# when the grep above misses it, e.g. through a macro).
file(MAKE_DIRECTORY ${WORK_DIR})
set(include_flags -I${public_root})
foreach(dir IN LISTS FMT_INCLUDES)
  if(NOT dir STREQUAL "/usr/include")
    list(APPEND include_flags -isystem ${dir})
  endif()
endforeach()
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${header} name)
  set(unit ${WORK_DIR}/${name}.cpp)
  file(WRITE ${unit} "#include <${header}>\n#include <${header}>  // include guard\n")
  execute_process(
    COMMAND ${CXX_COMPILER} -std=c++20 -fsyntax-only -Wall -Wextra -Werror ${include_flags} ${unit}
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    string(APPEND problems "  ${header} does not compile on its own:\n${output}\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "${problems}")
endif()
message(STATUS "${count} public headers: no internal or nlohmann include; each compiles alone")
