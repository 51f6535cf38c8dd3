# Installs the development component of the build BUILD into PREFIX (emptied first) and checks the
# headers it holds: every public header of kernels/ (SOURCE/kernels/include), and none that only
# Kiln's own tests use.
#   cmake -DBUILD=<build dir> -DSOURCE=<source dir> -DPREFIX=<scratch dir> -P check_installed_headers.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX}
                        --component kiln_development
                RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
    message(FATAL_ERROR "installing the development component failed: ${errors}")
endif()

file(GLOB public RELATIVE ${SOURCE}/kernels/include ${SOURCE}/kernels/include/kiln/*.hpp)
foreach(header IN LISTS public)
    if(NOT EXISTS ${PREFIX}/include/${header})
        message(FATAL_ERROR "a public header is not installed: ${header}")
    endif()
endforeach()

# Host conversions to and from 16-bit floats for the tests' references, not an API.
foreach(header IN ITEMS kiln/detail/half.hpp)
    if(EXISTS ${PREFIX}/include/${header})
        message(FATAL_ERROR "a header only Kiln's tests use is installed: ${header}")
    endif()
endforeach()
file(REMOVE_RECURSE ${PREFIX})
