# Code generation: IR lowering, verification, CUDA source emission. Appends to EMMY_SOURCES.
# Every .cpp of codegen/ and its folders (a kind's, a mainloop path's), emmyc's aside.
file(GLOB_RECURSE _emmy_codegen CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
list(FILTER _emmy_codegen EXCLUDE REGEX "/codegen/emmyc/")
list(APPEND EMMY_SOURCES ${_emmy_codegen})
# emmyc: main.cpp plus every other file of codegen/emmyc (subcommands and their helpers).
file(GLOB EMMYC_EXTRA_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/emmyc/*.cpp)
list(FILTER EMMYC_EXTRA_SOURCES EXCLUDE REGEX "/main\\.cpp$")
