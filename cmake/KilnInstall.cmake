# Install and export: headers, static libraries, the kiln tool, kilnConfig.cmake (+ version file)
# under lib/cmake/kiln and kiln.pc for pkg-config, so `find_package(kiln 0.1)` +
# `target_link_libraries(app PRIVATE kiln::kiln)` works from an install prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln CACHE STRING
    "Where kilnConfig.cmake is installed, relative to the prefix")

# Each folder of public headers; Kiln's internal headers live beside their sources, not here.
foreach(dir IN LISTS KILN_PUBLIC_INCLUDE_DIRS)
    install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT kiln_development
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh")
endforeach()

set_target_properties(kiln PROPERTIES EXPORT_NAME kiln)
install(TARGETS kiln kiln_base kiln_cache kiln_runtime kiln_kernels EXPORT kilnTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT kiln_development
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT kiln_runtime
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET kiln_tool)
    install(TARGETS kiln_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT kiln_runtime)
endif()

install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR}
    COMPONENT kiln_development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
    ${PROJECT_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
    DESTINATION ${KILN_INSTALL_CMAKEDIR} COMPONENT kiln_development)

# pkg-config: the libraries in link order, then what they need from the system (NVRTC,
# nvJitLink, OpenSSL and libsodium are opened at run time, not linked).
list(GET CUDAToolkit_INCLUDE_DIRS 0 KILN_PC_CUDA_INCLUDEDIR)
# The prefix is found from the .pc file's own place, so an installed tree can move.
file(RELATIVE_PATH KILN_PC_RELATIVE_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KILN_PC_RELATIVE_PREFIX "${KILN_PC_RELATIVE_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    COMPONENT kiln_development)

# The license and the changelog, beside the package's other documentation.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CHANGELOG.md
    DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT kiln_development)

# `cpack -G DEB`: the kiln-dev package, only when Kiln is the top-level project.
if(KILN_IS_TOP_LEVEL)
    include(KilnPackage)
endif()
