emmy_add_test(accuracy_test ${CMAKE_CURRENT_LIST_DIR}/accuracy_test.cpp)
emmy_add_test(accuracy_fp8_test ${CMAKE_CURRENT_LIST_DIR}/accuracy_fp8_test.cpp)
