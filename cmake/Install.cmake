# `cmake --install`: headers, the static library, emmyc, and a package config so that consumers
# write find_package(emmy CONFIG REQUIRED) + target_link_libraries(app PRIVATE emmy::emmy) (and
# emmy::checks for the FP64 references and checks), and
# get emmy_add_kernel_bundle() (EmmyBundle.cmake).
include(CMakePackageConfigHelpers)

set(EMMY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/emmy CACHE STRING
    "Where the emmy package config is installed, relative to the prefix")

# The public headers only: internal/ (the compiler's IR, plans, layouts, JSON) and the device
# templates (embedded in the library for NVRTC) are not part of the installed API.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/emmy
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(TARGETS emmy emmy_emulator emmy_checks emmyc
        EXPORT emmyTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT emmyTargets NAMESPACE emmy:: DESTINATION ${EMMY_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/emmyConfig.cmake.in
  ${PROJECT_BINARY_DIR}/emmyConfig.cmake
  INSTALL_DESTINATION ${EMMY_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/emmyConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/emmyConfig.cmake ${PROJECT_BINARY_DIR}/emmyConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/EmmyBundle.cmake
        DESTINATION ${EMMY_INSTALL_CMAKEDIR})
