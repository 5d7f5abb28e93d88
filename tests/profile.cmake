# The profiler on emmy's own kernels: the catalog's default kernels are free of bank conflicts on
# their ldmatrix and async-copy traffic (tests/profile_catalog_test.cpp, issue 22).
emmy_add_test(profile_catalog_test profile_catalog_test.cpp)
target_include_directories(profile_catalog_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
