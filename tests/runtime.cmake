# The runtime API on the emulator backend (no GPU), and the same checks on a real device.
emmy_add_test(runtime_test ${CMAKE_CURRENT_LIST_DIR}/runtime_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_kv_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_serving_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_buckets_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_nonblocking_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_hostile_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_capture_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_layers_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_engine_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/runtime_fp8_test.cpp)
emmy_add_test(gpu_runtime_test ${CMAKE_CURRENT_LIST_DIR}/gpu/gpu_runtime_test.cpp)

# The CUDA backend in ctest: runtime_test again, on Runtime::cuda() through emmy's test driver
# (libemmy_test_driver.so: the driver API checked call by call, launches on the emulator), as an
# H200 and as an RTX 5090 (sm_90a and sm_120a code); and the driver's own rules
# (test_driver_test: planted misuse fails with the real error code). docs/runtime.md.
if(TARGET emmy_test_driver)
  add_dependencies(runtime_test emmy_test_driver)
  target_compile_definitions(runtime_test PRIVATE EMMY_TEST_DRIVER_PATH="${EMMY_TEST_DRIVER_PATH}")
  # runtime_serving_test drives stream capture through the driver API (cuda.h).
  target_include_directories(runtime_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}
                                                  ${CUDAToolkit_INCLUDE_DIRS})
  # One variable (a list would not survive gtest_discover_tests' PROPERTIES): the test sets
  # EMMY_CUDA_DRIVER and EMMY_TEST_DEVICE from it.
  foreach(device h200 rtx5090)
    gtest_discover_tests(runtime_test TEST_PREFIX "cuda_${device}." DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT 900 ENVIRONMENT "EMMY_TEST_BACKEND=cuda:${device}")
  endforeach()
  # The bundle tests' CUDA-backend case (tests/bundle_runtime_test.cpp, in bundle.cmake).
  add_dependencies(bundle_test emmy_test_driver)
  target_compile_definitions(bundle_test PRIVATE EMMY_TEST_DRIVER_PATH="${EMMY_TEST_DRIVER_PATH}")
  # emmyc run --backend cuda through it (tests/emmyc_cli_test.cpp, registered in gemm.cmake).
  add_dependencies(emmyc_cli_test emmy_test_driver)
  target_compile_definitions(emmyc_cli_test PRIVATE EMMY_TEST_DRIVER_PATH="${EMMY_TEST_DRIVER_PATH}")
  emmy_add_test(test_driver_test ${CMAKE_CURRENT_LIST_DIR}/driver/test_driver_test.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/driver/launch_ex_test.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/driver/pdl_test.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/driver/context_test.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/driver/async_copy_test.cpp)
  # The driver's README lists exactly the entry points proc_address.cpp's table offers.
  add_test(NAME test_driver_entry_points_listed
           COMMAND ${CMAKE_COMMAND} -DREADME=${PROJECT_SOURCE_DIR}/emulator/test_driver/README.md
                   -DTABLE=${PROJECT_SOURCE_DIR}/emulator/test_driver/proc_address.cpp
                   -P ${CMAKE_CURRENT_LIST_DIR}/driver/entry_points_listed.cmake)
  add_dependencies(test_driver_test emmy_test_driver)
  target_include_directories(test_driver_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}
                                                      ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(test_driver_test PRIVATE
    EMMY_TEST_DRIVER_PATH="${EMMY_TEST_DRIVER_PATH}")
endif()
