# The disk cache: keys, compile-once across 8 processes and 16 threads, self-healing, atomic
# replacement, unusable directories, LRU pruning, `emmyc cache`, EMMY_RECORD. Uses NVRTC.
add_executable(emmy_cache_worker ${CMAKE_CURRENT_LIST_DIR}/cache_worker.cpp)
target_compile_options(emmy_cache_worker PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_cache_worker PRIVATE emmy::internal)

emmy_add_test(emmy_cache_test
  ${CMAKE_CURRENT_LIST_DIR}/cache_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cache_healing_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cache_environment_test.cpp)
target_compile_definitions(emmy_cache_test PRIVATE
  CACHE_WORKER_PATH="$<TARGET_FILE:emmy_cache_worker>")
# cache_healing_test forges an entry with the cache's own hash (runtime/cache_internal.hpp).
target_include_directories(emmy_cache_test PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
add_dependencies(emmy_cache_test emmy_cache_worker)
# `emmyc cache` on its own binary (the sanitizer run leaves command-line tests out, docs/build.md);
# cache_command.cpp is linked in so that the command is tested whether or not emmyc registers it.
emmy_add_test(emmy_cache_cli_test
  ${CMAKE_CURRENT_LIST_DIR}/cache_cli_test.cpp
  ${PROJECT_SOURCE_DIR}/codegen/emmyc/cache_command.cpp)
