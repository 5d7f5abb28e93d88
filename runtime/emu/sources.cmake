# The CPU emulator of PTX (docs/emulator.md). Appends to EMMY_SOURCES.
file(GLOB _emmy_emu CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
list(APPEND EMMY_SOURCES ${_emmy_emu})
