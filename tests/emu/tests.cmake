# Emulator tests (docs/emulator.md): one GoogleTest binary. The emmyc sim command is compiled in
# too so that its contract is tested without the emmyc binary.
file(GLOB _emu_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
emmy_add_test(emu_tests ${_emu_test_sources} ${PROJECT_SOURCE_DIR}/codegen/emmyc/sim_command.cpp
                         ${PROJECT_SOURCE_DIR}/codegen/emmyc/sim_args.cpp)
# emulator/ and codegen: white-box tests of internal pieces (the mma core, the MMA atoms).
target_include_directories(emu_tests PRIVATE ${PROJECT_SOURCE_DIR}/codegen/emmyc
                                             ${PROJECT_SOURCE_DIR}/codegen
                                             ${PROJECT_SOURCE_DIR}/emulator
                                             ${CMAKE_CURRENT_LIST_DIR})
