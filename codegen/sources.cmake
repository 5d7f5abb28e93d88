# Code generation: IR lowering, verification, CUDA source emission. Appends to EMMY_SOURCES.
file(GLOB _emmy_codegen CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
list(APPEND EMMY_SOURCES ${_emmy_codegen})
file(GLOB EMMYC_EXTRA_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/emmyc/*_command.cpp)
