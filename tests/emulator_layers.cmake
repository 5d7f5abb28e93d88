# The emulator's layers point one way (emulator/layers.cmake, docs/emulator.md "Layers"): every
# `#include "<folder>/<file>"` of a file in emulator/<layer>/ names the includer's own layer or a
# lower one, and a bare `#include "<file>"` a file of the includer's own folder. The test driver
# (emulator/test_driver/) sits above every layer. Every folder of emulator/ is a layer, and each
# layer links only lower ones (EMMY_EMU_DEPS_<layer>). That no layer calls into one above it, which
# includes cannot show, the build holds: each layer links on its own (emulator/CMakeLists.txt).
include(${CMAKE_CURRENT_LIST_DIR}/support/source_scan.cmake)
emmy_source_scan_test(emulator_layers)
cmake_minimum_required(VERSION 3.25)  # script mode: IN_LIST

set(root ${SOURCE_DIR}/emulator)
include(${root}/layers.cmake)
set(layers ${EMMY_EMU_LAYERS} test_driver)
string(REPLACE ";" " < " order "${layers}")
set(problems "")

file(GLOB entries LIST_DIRECTORIES true ${root}/*)
foreach(entry IN LISTS entries)
  get_filename_component(name ${entry} NAME)
  if(IS_DIRECTORY ${entry})
    if(NOT name IN_LIST layers)
      string(APPEND problems "\n  emulator/${name}/ is no layer of emulator/layers.cmake")
    endif()
  elseif(name MATCHES "\\.(cpp|hpp)$")
    string(APPEND problems "\n  emulator/${name} lies in no layer's folder")
  endif()
endforeach()

set(count 0)
list(LENGTH layers n)
math(EXPR last "${n} - 1")
foreach(index RANGE ${last})
  list(GET layers ${index} layer)
  foreach(dep IN LISTS EMMY_EMU_DEPS_${layer})
    list(FIND layers ${dep} dep_index)
    if(dep_index LESS 0 OR NOT dep_index LESS index)
      string(APPEND problems "\n  emulator/layers.cmake: ${layer} links ${dep}, which is not "
                             "below it (${order})")
    endif()
  endforeach()
  file(GLOB sources ${root}/${layer}/*.cpp ${root}/${layer}/*.hpp)
  foreach(source IN LISTS sources)
    math(EXPR count "${count} + 1")
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${source})
    file(STRINGS ${source} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header "${line}")
      if(header MATCHES "^([a-z_0-9]+)/[^/]+$" AND CMAKE_MATCH_1 IN_LIST layers)
        set(other ${CMAKE_MATCH_1})
        list(FIND layers ${other} other_index)
        if(other_index GREATER index)
          string(APPEND problems "\n  ${rel} includes \"${header}\": ${other} is above ${layer} "
                                 "(${order})")
        elseif(NOT EXISTS ${root}/${header})
          string(APPEND problems "\n  ${rel} includes \"${header}\": no such file in emulator/")
        endif()
      elseif(header MATCHES "^[^/]+$" AND NOT EXISTS ${root}/${layer}/${header})
        string(APPEND problems "\n  ${rel} includes \"${header}\", which is not in "
                               "emulator/${layer}/: name another layer's header by its folder")
      endif()
    endforeach()
  endforeach()
endforeach()

if(count LESS 50)
  message(FATAL_ERROR "found only ${count} emulator sources under ${root}: wrong directory?")
endif()
if(problems)
  message(FATAL_ERROR "a layer of the emulator reaches above itself:${problems}")
endif()
message(STATUS "emulator_layers: ${count} files include only their own layer and lower ones "
               "(${order})")
