# System dependencies only (Debian / Ubuntu packages); nothing is downloaded at configure time.
find_package(CUDAToolkit 12.4 REQUIRED)
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)

# xxHash is used header-only (XXH_INLINE_ALL). A GPU machine without libxxhash-dev can carry the
# unpacked package in .deps/ (scripts/fetch_device_deps.sh).
find_path(KILN_XXHASH_INCLUDE_DIR xxhash.h
    HINTS ${PROJECT_SOURCE_DIR}/.deps/root/usr/include
    DOC "Directory holding xxhash.h (Debian: libxxhash-dev)")
if(NOT KILN_XXHASH_INCLUDE_DIR)
    message(FATAL_ERROR "xxhash.h not found: install libxxhash-dev, or run scripts/fetch_device_deps.sh "
                        "and carry .deps/ to this machine")
endif()
add_library(kiln_xxhash INTERFACE)
target_include_directories(kiln_xxhash SYSTEM INTERFACE $<BUILD_INTERFACE:${KILN_XXHASH_INCLUDE_DIR}>)
target_compile_definitions(kiln_xxhash INTERFACE XXH_INLINE_ALL)
