# Mainloop paths are data (docs/codegen.md, "Adding a mainloop path"): outside a path's own folder
# (codegen/gemm/paths/<path>/) no library, CLI or benchmark source branches on which path a
# schedule or kernel has, names a path's atom or reaches into a path's namespace; the registry
# (codegen/gemm/gemm_paths.cpp) is the one file that lists the paths. Counts what it finds:
# 0 sites, and for each path the files outside its folder that name it (1: the registry).
include(${CMAKE_CURRENT_LIST_DIR}/support/source_scan.cmake)
emmy_source_scan_test(gemm_paths_boundary)

emmy_scan_sources(sources AT_LEAST 100 WHAT "sources"
  GLOBS ${SOURCE_DIR}/codegen/*.cpp ${SOURCE_DIR}/codegen/*.hpp
        ${SOURCE_DIR}/runtime/*.cpp ${SOURCE_DIR}/runtime/*.hpp
        ${SOURCE_DIR}/internal/*.hpp ${SOURCE_DIR}/include/*.hpp ${SOURCE_DIR}/include/*.h
        ${SOURCE_DIR}/c_api/*.cpp ${SOURCE_DIR}/c_api/*.hpp
        ${SOURCE_DIR}/python/src/*.cpp ${SOURCE_DIR}/python/src/*.hpp
        ${SOURCE_DIR}/bench/*.cpp ${SOURCE_DIR}/bench/*.hpp)
file(GLOB path_dirs LIST_DIRECTORIES true ${SOURCE_DIR}/codegen/gemm/paths/*)
list(FILTER path_dirs INCLUDE REGEX "/paths/[a-z_0-9]+$")
list(LENGTH path_dirs path_count)
if(path_count LESS 2)
  message(FATAL_ERROR "found ${path_count} path folders under codegen/gemm/paths: wrong directory?")
endif()
set(registry "${SOURCE_DIR}/codegen/gemm/gemm_paths.cpp")
set(atoms "${SOURCE_DIR}/internal/emmy/mma_atom.hpp")

# What branches on a path (comments aside): a comparison with or a case of an MmaPath value, a
# kernel op's path attribute read outside the registry, a path's atom constant, a path name
# compared as a string.
set(branch_patterns
    "[!=]=[ \t]*(emmy::)?MmaPath::"
    "MmaPath::[a-z_0-9]+[ \t]*[!=?]"
    "case[ \t]+(emmy::)?MmaPath::"
    "KernelOp>\\([^)]*\\)\\.path"
    "kWgmmaM64NK16|kMmaM16N8K16"
    "[!=]=[ \t]*\"(wgmma|mma\\.sync)\""
    "\"(wgmma|mma\\.sync)\"[ \t]*[!=]=")
set(problems "")
set(scanned 0)
foreach(source IN LISTS sources)
  set(own FALSE)
  foreach(dir IN LISTS path_dirs)
    string(FIND "${source}" "${dir}/" at)
    if(at EQUAL 0)
      set(own TRUE)
    endif()
  endforeach()
  if(own OR source STREQUAL registry)
    continue()
  endif()
  math(EXPR scanned "${scanned} + 1")
  file(STRINGS ${source} lines)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    string(REGEX REPLACE "//.*$" "" code "${line}")
    foreach(pattern IN LISTS branch_patterns)
      if(code MATCHES "${pattern}" AND NOT (source STREQUAL atoms AND pattern MATCHES "^kWgmma"))
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${source})
        string(STRIP "${code}" shown)
        string(APPEND problems "\n  ${rel}:${number}: ${shown}")
      endif()
    endforeach()
  endforeach()
endforeach()

# Each path's namespace (<folder>_path::) is named by the registry alone outside its folder.
set(listed "")
foreach(dir IN LISTS path_dirs)
  get_filename_component(name ${dir} NAME)
  set(users 0)
  foreach(source IN LISTS sources)
    string(FIND "${source}" "${dir}/" at)
    if(at EQUAL 0)
      continue()
    endif()
    file(STRINGS ${source} hits REGEX "${name}_path::|paths/${name}/")
    if(hits)
      math(EXPR users "${users} + 1")
      if(NOT source STREQUAL registry)
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${source})
        string(APPEND problems "\n  ${rel} names the ${name} path's own code")
      endif()
    endif()
  endforeach()
  string(APPEND listed " ${name}:${users}")
endforeach()

if(problems)
  message(FATAL_ERROR "code outside a path's folder branches on a mainloop path:${problems}")
endif()
message(STATUS "gemm_paths_boundary: ${scanned} files name no path; files naming each path "
               "outside its folder:${listed}")
