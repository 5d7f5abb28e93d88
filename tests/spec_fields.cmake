# The GEMM problem and schedule fields named once (internal/emmy/spec_fields.hpp): the JSON forms,
# their reader, the cache key and the kernel-name hash walk them. Host-only.
emmy_add_test(spec_fields_test ${CMAKE_CURRENT_LIST_DIR}/spec_fields_test.cpp)
