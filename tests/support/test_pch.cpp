// The translation unit that builds the suites' shared precompiled header (tests/CMakeLists.txt).
