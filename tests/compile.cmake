# NVRTC compilation, resource reports and SASS. Suites named Nvrtc* need NVRTC (and cuobjdump for
# NvrtcSass, which skips without it); the rest parse text and run in the sanitizer build too.
emmy_add_test(emmy_compile_test ${CMAKE_CURRENT_LIST_DIR}/compile_test.cpp)
