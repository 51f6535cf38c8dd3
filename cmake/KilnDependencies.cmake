# System dependencies only (Debian / Ubuntu packages); nothing is downloaded at configure time.
find_package(CUDAToolkit 12.4 REQUIRED)
# NVRTC alone, as kiln::nvrtc. FindCUDAToolkit's CUDA::nvrtc also links the driver (libcuda, the
# stub at build time), which libnvrtc does not need and Kiln never links (Kiln opens the driver at
# run time). Linkers that drop unused libraries hid this; without --as-needed (GCC with
# -fsanitize, most non-Debian toolchains) every program linking Kiln needed libcuda.so.1 to start.
# kilnConfig.cmake defines the same target for installed packages.
if(NOT TARGET kiln::nvrtc)
    get_target_property(_kiln_nvrtc_location CUDA::nvrtc IMPORTED_LOCATION)
    add_library(kiln::nvrtc UNKNOWN IMPORTED)
    set_target_properties(kiln::nvrtc PROPERTIES IMPORTED_LOCATION "${_kiln_nvrtc_location}")
endif()
# nvJitLink links relocatable device code (-dc) with the device runtime; like NVRTC it needs no
# driver. CUDA::nvJitLink where FindCUDAToolkit has it (CMake 3.26+), else found beside NVRTC.
# kilnConfig.cmake defines the same target for installed packages.
if(NOT TARGET kiln::nvjitlink)
    if(TARGET CUDA::nvJitLink)
        get_target_property(_kiln_nvjitlink_location CUDA::nvJitLink IMPORTED_LOCATION)
    else()
        find_library(_kiln_nvjitlink_location nvJitLink HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
    endif()
    add_library(kiln::nvjitlink UNKNOWN IMPORTED)
    set_target_properties(kiln::nvjitlink PROPERTIES IMPORTED_LOCATION "${_kiln_nvjitlink_location}")
endif()
find_package(Threads REQUIRED)
# OpenSSL 3's libcrypto signs and verifies cache entries (Ed25519) and hashes what is signed
# (SHA-256); its libssl speaks TLS to a rediss:// remote cache. A GPU machine without libssl-dev
# can carry the unpacked packages in .deps/ (scripts/fetch_device_deps.sh); Debian keeps
# opensslconf.h under the multiarch include folder.
set(_kiln_deps_root ${PROJECT_SOURCE_DIR}/.deps/root/usr)
if(NOT EXISTS /usr/include/openssl/evp.h AND EXISTS ${_kiln_deps_root}/include/openssl/evp.h
   AND NOT OPENSSL_ROOT_DIR)
    # The machine's own libcrypto.so.3 when it has one (its C library matches), else the carried.
    file(GLOB _kiln_deps_crypto /usr/lib/*-linux-gnu/libcrypto.so.3 /lib/*-linux-gnu/libcrypto.so.3
         /usr/lib64/libcrypto.so.3 ${_kiln_deps_root}/lib/*/libcrypto.so.3)
    list(GET _kiln_deps_crypto 0 _kiln_deps_crypto)
    file(GLOB _kiln_deps_ssl /usr/lib/*-linux-gnu/libssl.so.3 /lib/*-linux-gnu/libssl.so.3
         /usr/lib64/libssl.so.3 ${_kiln_deps_root}/lib/*/libssl.so.3)
    list(GET _kiln_deps_ssl 0 _kiln_deps_ssl)
    file(GLOB _kiln_deps_multiarch ${_kiln_deps_root}/include/*-linux-gnu)
    set(OPENSSL_INCLUDE_DIR ${_kiln_deps_root}/include CACHE PATH "")
    set(OPENSSL_CRYPTO_LIBRARY ${_kiln_deps_crypto} CACHE FILEPATH "")
    set(OPENSSL_SSL_LIBRARY ${_kiln_deps_ssl} CACHE FILEPATH "")
endif()
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto SSL)
if(_kiln_deps_multiarch)
    set_property(TARGET OpenSSL::Crypto APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
                 ${_kiln_deps_multiarch})
endif()
# kiln_carried_library(NAME HEADER SONAME PACKAGE): the library NAME as kiln::NAME, from the
# system or, on a GPU machine without its -dev package, from .deps/ (the machine's own SONAME is
# preferred when it has one). Sets KILN_<NAME>_LIBRARY_HINT and KILN_<NAME>_INCLUDE_HINT, where
# kilnConfig.cmake looks too, after the usual places.
function(kiln_carried_library name header soname package)
    string(TOUPPER ${name} upper)
    if(NOT TARGET kiln::${name})
        find_path(KILN_${upper}_INCLUDE_DIR ${header} HINTS ${_kiln_deps_root}/include
                  DOC "Directory holding ${header} (Debian: ${package})")
        find_library(KILN_${upper}_LIBRARY NAMES ${name} ${soname}
                     HINTS ${_kiln_deps_root}/lib/x86_64-linux-gnu
                           ${_kiln_deps_root}/lib/aarch64-linux-gnu)
        if(NOT KILN_${upper}_INCLUDE_DIR OR NOT KILN_${upper}_LIBRARY)
            message(FATAL_ERROR "lib${name} not found: install ${package}, or run "
                                "scripts/fetch_device_deps.sh and carry .deps/ to this machine")
        endif()
        add_library(kiln::${name} UNKNOWN IMPORTED)
        set_target_properties(kiln::${name} PROPERTIES
            IMPORTED_LOCATION "${KILN_${upper}_LIBRARY}"
            INTERFACE_INCLUDE_DIRECTORIES "${KILN_${upper}_INCLUDE_DIR}")
    endif()
    get_filename_component(hint "${KILN_${upper}_LIBRARY}" DIRECTORY)
    set(KILN_${upper}_LIBRARY_HINT "${hint}" PARENT_SCOPE)
    set(KILN_${upper}_INCLUDE_HINT "${KILN_${upper}_INCLUDE_DIR}" PARENT_SCOPE)
endfunction()
# libsodium signs and verifies (Ed25519, about twice as fast to verify as OpenSSL 3).
kiln_carried_library(sodium sodium.h libsodium.so.23 libsodium-dev)
# libzstd compresses cache entries (with a dictionary built into Kiln).
kiln_carried_library(zstd zstd.h libzstd.so.1 libzstd-dev)
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

# DLPack (header only): kiln::from_dlpack / to_dlpack. Public headers only forward-declare its
# types, so users include <dlpack/dlpack.h> themselves when they use them. Carried in .deps/ like
# xxHash for machines without libdlpack-dev.
find_path(KILN_DLPACK_INCLUDE_DIR dlpack/dlpack.h
    HINTS ${PROJECT_SOURCE_DIR}/.deps/root/usr/include
    DOC "Directory holding dlpack/dlpack.h (Debian: libdlpack-dev)")
if(NOT KILN_DLPACK_INCLUDE_DIR)
    message(FATAL_ERROR "dlpack/dlpack.h not found: install libdlpack-dev, or run "
                        "scripts/fetch_device_deps.sh and carry .deps/ to this machine")
endif()
add_library(kiln_dlpack INTERFACE)
target_include_directories(kiln_dlpack SYSTEM INTERFACE $<BUILD_INTERFACE:${KILN_DLPACK_INCLUDE_DIR}>)
