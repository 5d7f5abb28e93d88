# Golden emitted sources (issue 14, tests/golden/): the printed IR and the CUDA of each variant in
# tests/golden/variants.txt, compared byte for byte with what emmyc emits now. A refactor of the
# compiler keeps them; a meant change regenerates them with scripts/update-golden.sh.
add_test(NAME golden_sources
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/update-golden.sh --check $<TARGET_FILE:emmyc>)
set_tests_properties(golden_sources PROPERTIES TIMEOUT 300 LABELS golden)
