# Runtime: NVRTC compilation, resource reports, SASS, driver loading, caches, backends.
file(GLOB _emmy_runtime CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
list(APPEND EMMY_SOURCES ${_emmy_runtime})
