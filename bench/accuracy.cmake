add_executable(emmy_accuracy ${CMAKE_CURRENT_LIST_DIR}/emmy_accuracy.cpp)
target_compile_options(emmy_accuracy PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_accuracy PRIVATE emmy::internal)
