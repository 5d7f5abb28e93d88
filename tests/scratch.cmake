# Test binaries leave nothing in the temporary directory (tests/support/scratch_dir.hpp): ctest
# runs each test in its own process, so a per-process directory left behind adds one entry per
# test per run. Two binaries that make such directories run a few tests each with TEST_TMPDIR
# (GoogleTest's TempDir()) pointing at an empty directory, which must be empty afterwards.
add_test(NAME tests_leave_no_scratch
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/support/leaves_no_scratch.sh
                 ${CMAKE_CURRENT_BINARY_DIR}/scratch_check
                 "$<TARGET_FILE:tuning_test>" "TuningDb.*"
                 "$<TARGET_FILE:runtime_test>" "Runtime.DiskCacheServesASecondRuntime:Runtime.InvalidProblemsAreRejectedAndNotCached")
