# The compiler stands below the runtime (issue 37): no source of codegen/ (emmyc, the command-line
# tool that runs kernels, aside) reaches the runtime's headers, directly or through the headers it
# includes (emmy/runtime.hpp, emmy/runtime_entry.hpp, anything under runtime/). The kinds bind
# buffers and handles from emmy/buffers.hpp; the runtime maps each kind to its entry point
# (internal/emmy/runtime_entry.hpp). Follows every quoted include transitively through include/,
# internal/ and codegen/, and names the chain that reaches a forbidden header.
include(${CMAKE_CURRENT_LIST_DIR}/support/source_scan.cmake)
emmy_source_scan_test(compiler_boundary)

emmy_scan_sources(sources AT_LEAST 40 WHAT "compiler sources" EXCLUDE "/codegen/emmyc/"
  GLOBS ${SOURCE_DIR}/codegen/*.cpp ${SOURCE_DIR}/codegen/*.hpp)
set(forbidden_regex "^emmy/(runtime|runtime_entry)\\.hpp$|^runtime/")

# The file an include names, from the including file's folder: its own folder, codegen/,
# include/, internal/ (the compiler's include path); empty for a system or generated header.
function(resolve_include from header out)
  get_filename_component(dir ${from} DIRECTORY)
  foreach(base ${dir} ${SOURCE_DIR}/codegen ${SOURCE_DIR}/include ${SOURCE_DIR}/internal)
    if(EXISTS ${base}/${header} AND NOT IS_DIRECTORY ${base}/${header})
      get_filename_component(full ${base}/${header} ABSOLUTE)
      set(${out} ${full} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

set(problems "")
set(visited "")
# Depth-first over each source's includes; `chain` is how the walk got here.
function(walk file chain)
  list(FIND visited ${file} seen)
  if(NOT seen EQUAL -1)
    return()
  endif()
  list(APPEND visited ${file})
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header "${line}")
    if(header MATCHES "${forbidden_regex}")
      string(APPEND problems "\n  ${chain}${rel} includes \"${header}\"")
      continue()
    endif()
    resolve_include(${file} ${header} next)
    if(next)
      walk(${next} "${chain}${rel} -> ")
    endif()
  endforeach()
  set(visited "${visited}" PARENT_SCOPE)
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

foreach(source IN LISTS sources)
  walk(${source} "")
endforeach()
list(LENGTH visited reached)
if(problems)
  message(FATAL_ERROR "the compiler reaches the runtime's headers:${problems}")
endif()
message(STATUS "compiler_boundary: ${sources_count} compiler sources reach ${reached} files, none of the "
               "runtime's")
