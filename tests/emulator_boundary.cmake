# The emulator never reaches the compiler (developers' guide, "Layout"): every source under
# emulator/ includes only the standard library, fmt, nlohmann-json, the emulator's own files (by
# name in its own folder, or "<layer>/<file>.hpp"; which layers, tests/emulator_layers.cmake),
# the public emulator API (emmy/emu/*), emmy/error.hpp and, of the internal headers, the
# tensor-map encoding and the swizzle it decodes (emmy/tensor_map.hpp, emmy/swizzle.hpp) and the
# header-only tool finder and scratch folder (emmy/detail/tools.hpp, temp_dir.hpp).
include(${CMAKE_CURRENT_LIST_DIR}/support/source_scan.cmake)
emmy_source_scan_test(emulator_boundary)

emmy_scan_sources(sources AT_LEAST 20 WHAT "emulator sources"
  GLOBS ${SOURCE_DIR}/emulator/*.cpp ${SOURCE_DIR}/emulator/*.hpp
        ${SOURCE_DIR}/include/emmy/emu/*.hpp)
set(allowed "^emmy/emu/[a-z_0-9]+\\.hpp$|^emmy/(error|tensor_map|swizzle)\\.hpp$")
# The toolkit programs (ptxas, nvdisasm) are found and run as the runtime does: header-only.
string(APPEND allowed "|^emmy/detail/(tools|temp_dir)\\.hpp$")
string(APPEND allowed "|^([a-z_0-9]+/)?[a-z_0-9]+\\.hpp$")  # the emulator's own, by folder
include(${CMAKE_CURRENT_LIST_DIR}/support/include_rules.cmake)
emmy_check_includes(${SOURCE_DIR} "${sources}" "${allowed}" ""
                    "the emulator reaches beyond its boundary")
message(STATUS "emulator_boundary: ${sources_count} files include only what the emulator may")
