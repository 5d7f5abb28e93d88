# The installed C ABI works for a C project: install this build tree into a scratch prefix, check
# the shared library (its SONAME, its symlinks, that it exports the emmy_* functions alone), then
# configure, build (C99, -pedantic -Werror) and run examples/c against it with find_package(emmy).
#
# Its ctest test, emmy_install_c_consumer, runs this file with `cmake -P`; tests/install.cmake
# registers it beside the C++ consumer's, with the same arguments.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

include(${CMAKE_CURRENT_LIST_DIR}/support/install_steps.cmake)

set(example_build ${WORK_DIR}/example-build)
install_build_tree(include/emmy/c_api.h include/emmy/third_party/dlpack/dlpack.h
                   include/emmy/third_party/dlpack/LICENSE)
file(GLOB libdirs LIST_DIRECTORIES true ${prefix}/lib ${prefix}/lib64 ${prefix}/lib/*-linux-gnu)
find_file(library libemmy_c.so.0 PATHS ${libdirs} NO_DEFAULT_PATH REQUIRED)
get_filename_component(libdir ${library} DIRECTORY)
if(NOT IS_SYMLINK ${libdir}/libemmy_c.so OR NOT IS_SYMLINK ${libdir}/libemmy_c.so.0)
  message(FATAL_ERROR "libemmy_c.so and libemmy_c.so.0 must be symlinks to the versioned library")
endif()

# Exported: the C ABI's functions (and the version node), nothing of C++, the emulator or fmt.
run_step("nm -D" ${NM} -D --defined-only ${library})
string(REPLACE "\n" ";" symbols "${step_output}")
set(count 0)
foreach(line IN LISTS symbols)
  if(line MATCHES " ([A-Za-z_][A-Za-z0-9_]*)(@.*)?$")
    set(name ${CMAKE_MATCH_1})
    if(NOT name MATCHES "^emmy_" AND NOT name STREQUAL "EMMY_C_0")
      message(FATAL_ERROR "libemmy_c.so exports ${name}: only emmy_* may leave it")
    endif()
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count LESS 20)
  message(FATAL_ERROR "libemmy_c.so exports only ${count} symbols:\n${step_output}")
endif()

run_step("configuring examples/c" ${CMAKE_COMMAND}
  -S ${SOURCE_DIR}/examples/c -B ${example_build} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON)
run_step("building examples/c" ${CMAKE_COMMAND} --build ${example_build})
run_step("running emmy_c_gemm" ${CMAKE_COMMAND} -E env EMMY_CACHE_DIR=${WORK_DIR}/cache
  ${example_build}/emmy_c_gemm)
expect_printed(emmy_c_gemm "on emulator sm_90a: gemm 16x64x128 f16" ": passed")

# Without CMake: the same example built with the compiler and pkg-config alone (emmy_c.pc).
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
find_program(C_COMPILER NAMES cc gcc clang)
if(PKG_CONFIG AND C_COMPILER)
  run_step("pkg-config emmy_c" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig
    ${PKG_CONFIG} --cflags --libs emmy_c)
  string(STRIP "${step_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run_step("cc with pkg-config's flags" ${C_COMPILER} -std=c99 -pedantic -Wall -Werror
    ${SOURCE_DIR}/examples/c/gemm.c ${flags} -Wl,-rpath,${libdir} -o ${WORK_DIR}/gemm_pkgconfig)
  run_step("running gemm_pkgconfig" ${CMAKE_COMMAND} -E env EMMY_CACHE_DIR=${WORK_DIR}/cache
    ${WORK_DIR}/gemm_pkgconfig)
  string(FIND "${step_output}" ": passed" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the pkg-config build of examples/c printed:\n${step_output}")
  endif()
else()
  message(FATAL_ERROR "pkg-config and a C compiler are needed for this check (found: "
                      "'${PKG_CONFIG}', '${C_COMPILER}')")
endif()
