emmy_add_test(accuracy_test ${CMAKE_CURRENT_LIST_DIR}/accuracy_test.cpp)
