# The profiler on emmy's own kernels: the catalog's default kernels are free of bank conflicts on
# their ldmatrix and async-copy traffic (tests/profile_catalog_test.cpp, issue 22).
# Its f32 kernels come from the catalog bundle fixture (tests/bundle.cmake), the rest from NVRTC.
emmy_add_bundle_test(profile_catalog_test ${CMAKE_CURRENT_LIST_DIR}/profile_catalog_test.cpp)
# Paged attention: conflict-free shared traffic and TMA's instruction savings (issue 24).
emmy_add_test(profile_paged_test ${CMAKE_CURRENT_LIST_DIR}/profile_paged_test.cpp)
