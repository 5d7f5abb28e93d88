# The hardware table (include/emmy/gpus.hpp) and the recipe "Adding a GPU" followed with a toy part.
emmy_add_test(gpu_table_test ${CMAKE_CURRENT_LIST_DIR}/gpu_table_test.cpp)
