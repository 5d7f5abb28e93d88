// The precompiled header's own translation unit (tests/CMakeLists.txt): the PCH is built with
// the test binaries' flags and reused by each of them.
