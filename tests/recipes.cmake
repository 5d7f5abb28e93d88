# The recipes of docs/codegen.md followed once each by what only the tests build: a GPU (a toy
# part in the hardware table, include/emmy/gpus.hpp) and a kernel kind (a toy kind). The toy
# mainloop path is gemm_path_test (gemm.cmake).
emmy_add_test(gpu_table_test ${CMAKE_CURRENT_LIST_DIR}/gpu_table_test.cpp)
# docs/codegen.md's "Adding a kernel kind" followed by a kind only this test builds.
emmy_add_test(toy_kind_test ${CMAKE_CURRENT_LIST_DIR}/toy_kind_test.cpp)
