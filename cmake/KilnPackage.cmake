# A Debian package from the install rules: `cpack -G DEB` in the build directory (or `cmake --build
# build --target package`) makes kiln-dev_<version>_<arch>.deb with the headers, the static
# libraries, the CMake package, kiln.pc, the `kiln` tool and the license, installed under /usr. The
# CUDA toolkit is not a declared dependency: its package names differ between NVIDIA's repositories,
# distributions and containers, so docs/embedding.md states what is expected of it (12.4 or newer,
# found by CMake's FindCUDAToolkit; libnvrtc on the loader path or in the toolkit's lib64, which the
# tool's RUNPATH names).
set(CPACK_PACKAGE_NAME kiln-dev)
set(CPACK_PACKAGE_VENDOR "The Kiln developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "JIT CUDA kernels for C++ programs, with a persistent kernel cache")
set(CPACK_PACKAGE_DESCRIPTION
    "Kiln compiles CUDA kernels with NVRTC at run time, keeps the cubins in a persistent on-disk
cache shared by processes, CI runs and machines, and launches them through the driver API.
This package holds the headers, the static libraries, the CMake package (find_package(kiln)),
the pkg-config file and the kiln command-line tool.")
set(CPACK_PACKAGE_CONTACT "Kiln developers <kiln@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_LICENSE Apache-2.0)
# What users of the package compile and link against: spdlog (public in kiln/log.hpp), fmt,
# libzstd (compressed entries); the tool's shared libraries come with them. OpenSSL 3 and
# libsodium are opened at run time when a program signs, verifies or speaks TLS. DLPack is only needed by
# programs that include <dlpack/dlpack.h> themselves; pkg-config only by those that use kiln.pc.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libspdlog-dev (>= 1:1.10), libfmt-dev (>= 9), libssl3 (>= 3), libsodium23, libzstd-dev")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libdlpack-dev, pkg-config")

set(CPACK_STRIP_FILES TRUE) # debug info stays in the build tree: the package is 5x smaller
include(CPack)
