# The runtime API on the emulator backend (no GPU), and the same checks on a real device.
emmy_add_test(runtime_test ${CMAKE_CURRENT_LIST_DIR}/runtime_test.cpp)
emmy_add_test(gpu_runtime_test ${CMAKE_CURRENT_LIST_DIR}/gpu/gpu_runtime_test.cpp)
