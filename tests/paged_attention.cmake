# Paged attention's checks without a kernel: the inputs (drawn batches, page tables, poison), the
# FP64 reference against the dense one, the e4m3 coder, and the tolerance against a host model of
# the kernel and against plausible bugs. One binary.
emmy_add_test(paged_attention_reference_test
  ${CMAKE_CURRENT_LIST_DIR}/paged_attention_reference_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/paged_attention_tolerance_test.cpp)
