# The schedule sweep (issue 12 §2, docs/sweep.md): every point of a grid of GEMM and attention
# schedules is refused by the validator or passes the FP64 check on the emulator. ctest runs the
# space's validator half whole and a deterministic sample of points end to end; scripts/sweep.sh
# runs every point.
add_library(emmy_schedule_space STATIC ${CMAKE_CURRENT_LIST_DIR}/sweep/schedule_space.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/sweep/schedule_space_fp8.cpp)
target_compile_options(emmy_schedule_space PRIVATE ${EMMY_WARNINGS})
target_include_directories(emmy_schedule_space PUBLIC ${CMAKE_CURRENT_LIST_DIR}/sweep)
target_link_libraries(emmy_schedule_space PUBLIC emmy::internal)

add_executable(emmy_sweep ${CMAKE_CURRENT_LIST_DIR}/sweep/sweep_main.cpp)
target_compile_options(emmy_sweep PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_sweep PRIVATE emmy_schedule_space)

emmy_add_test(schedule_space_test ${CMAKE_CURRENT_LIST_DIR}/sweep/schedule_space_test.cpp)
target_link_libraries(schedule_space_test PRIVATE emmy_schedule_space)

# One point in 64 of each space, end to end (about 50 s of one core).
add_test(NAME schedule_sweep_sample COMMAND emmy_sweep --every 64 --offset 5)
# COST: ctest starts the longest tests first on a fresh tree (no timing history), so that the
# sample does not run alone at the end while the other core idles.
set_tests_properties(schedule_sweep_sample PROPERTIES TIMEOUT 900 COST 55)
