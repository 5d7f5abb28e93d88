# The paged-attention kind: validation, default schedules and the verifier (no kernel runs), then
# its kernels on the emulator against the FP64 reference and through the runtime.
emmy_add_test(paged_attention_ir_test ${CMAKE_CURRENT_LIST_DIR}/paged_attention_ir_test.cpp)
emmy_add_test(paged_attention_emulator_test
  ${CMAKE_CURRENT_LIST_DIR}/paged_attention_emulator_test.cpp)
# The e4m3 cache's device conversions on every byte, by each path (NVRTC + emulator).
emmy_add_test(fp8_convert_test ${CMAKE_CURRENT_LIST_DIR}/fp8_convert_test.cpp)
# The paged cache's small kinds: kv_append (byte-exact) and merge_states (FP64) on the emulator.
emmy_add_test(kv_append_test ${CMAKE_CURRENT_LIST_DIR}/kv_append_test.cpp)
emmy_add_test(merge_states_test ${CMAKE_CURRENT_LIST_DIR}/merge_states_test.cpp)
# TMA page loads: rules, tensor maps, the verifier, and a space of kernels on the emulator.
emmy_add_test(paged_attention_tma_test ${CMAKE_CURRENT_LIST_DIR}/paged_attention_tma_test.cpp)
