# Warnings and sanitizers live on an INTERFACE target that Kiln's own targets link PRIVATE,
# so nothing leaks into a parent project.
add_library(kiln_settings INTERFACE)
target_compile_features(kiln_settings INTERFACE cxx_std_17)
target_compile_options(kiln_settings INTERFACE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                   -Wno-missing-field-initializers>)

if(KILN_SANITIZE)
    string(REPLACE ";" "," _kiln_sanitizers "${KILN_SANITIZE}")
    target_compile_options(kiln_settings INTERFACE -fsanitize=${_kiln_sanitizers} -fno-omit-frame-pointer)
    target_link_options(kiln_settings INTERFACE -fsanitize=${_kiln_sanitizers})
endif()
