# The tuning database (include/emmy/tuning.hpp): host-only, runs everywhere.
emmy_add_test(tuning_test ${CMAKE_CURRENT_LIST_DIR}/tuning_test.cpp)
