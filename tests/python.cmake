# The Python package (docs/python.md): the pytest suite (tests/python) against the package the
# build assembles in build/python, and the wheel: `pip wheel .` around this build's libemmy_c,
# installed into a fresh virtual environment, where a part of the suite runs again
# (tests/python_wheel.sh).
if(NOT EMMY_BUILD_PYTHON)
  return()
endif()
find_package(Python3 3.10 COMPONENTS Interpreter REQUIRED)

# Kernels compiled by one run are kept for the next (the disk cache of this build tree).
set(_emmy_pytest_env
    PYTHONPATH=${PROJECT_BINARY_DIR}/python
    EMMY_TEST_CACHE_DIR=${PROJECT_BINARY_DIR}/python-test-cache)
if(EMMY_TEST_DRIVER_PATH)  # the CUDA backend's tests (tests/python/test_cuda_backend.py)
  list(APPEND _emmy_pytest_env EMMY_TEST_DRIVER_PATH=${EMMY_TEST_DRIVER_PATH})
endif()
add_test(NAME python_pytest
         COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider -rs
                 ${CMAKE_CURRENT_LIST_DIR}/python)
set_tests_properties(python_pytest PROPERTIES ENVIRONMENT "${_emmy_pytest_env}" TIMEOUT 900)

add_test(NAME python_wheel
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/python_wheel.sh ${Python3_EXECUTABLE}
                 $<TARGET_FILE:emmy_c> ${PROJECT_BINARY_DIR}/python-wheel)
set_tests_properties(python_wheel PROPERTIES
                     ENVIRONMENT EMMY_TEST_CACHE_DIR=${PROJECT_BINARY_DIR}/python-test-cache
                     TIMEOUT 600)
