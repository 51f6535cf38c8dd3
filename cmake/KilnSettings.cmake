# Warnings and sanitizers live on an INTERFACE target that Kiln's own targets link PRIVATE,
# so nothing leaks into a parent project.
add_library(kiln_settings INTERFACE)
target_compile_features(kiln_settings INTERFACE cxx_std_17)
target_compile_options(kiln_settings INTERFACE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                   -Wno-missing-field-initializers>)

# Kiln's libraries call into libc and libstdc++ through GOT entries bound when the program
# loads (-fno-plt), not through lazily bound PLT stubs: each stub's first call resolves its
# symbol (2-4 us apiece on a VM), and a fresh process's first kernel call from the cache made
# about ten such first calls. Compile-only and PRIVATE: the program's own code binds as it chooses.
add_library(kiln_library_settings INTERFACE)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_compile_options(kiln_library_settings INTERFACE $<$<CXX_COMPILER_ID:GNU,Clang>:-fno-plt>)
endif()

if(KILN_SANITIZE)
    string(REPLACE ";" "," _kiln_sanitizers "${KILN_SANITIZE}")
    target_compile_options(kiln_settings INTERFACE -fsanitize=${_kiln_sanitizers} -fno-omit-frame-pointer)
    target_link_options(kiln_settings INTERFACE -fsanitize=${_kiln_sanitizers})
endif()
