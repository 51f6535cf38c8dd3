# Installs the development component of the build BUILD into PREFIX (emptied first) and checks the
# headers it holds: every public header of kernels/ and runtime/, and none of Kiln's internals
# nor any that only Kiln's own tests use.
#   cmake -DBUILD=<build dir> -DSOURCE=<source dir> -DPREFIX=<scratch dir> -P check_installed_headers.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX}
                        --component kiln_development
                RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
    message(FATAL_ERROR "installing the development component failed: ${errors}")
endif()

file(GLOB public ${SOURCE}/kernels/include/kiln/*.hpp ${SOURCE}/kernels/*/include/kiln/*.hpp
                  ${SOURCE}/runtime/*/include/kiln/*.hpp)
list(LENGTH public count)
if(count LESS 20)
    message(FATAL_ERROR "only ${count} public headers found under ${SOURCE}: the layout moved?")
endif()
foreach(path IN LISTS public)
    get_filename_component(name ${path} NAME)
    if(NOT EXISTS ${PREFIX}/include/kiln/${name})
        message(FATAL_ERROR "a public header is not installed: kiln/${name}")
    endif()
endforeach()

# Kiln's internals (the driver's entry points, the activity hook, the toolkit's include folder)
# and the tests' host conversions to and from 16-bit floats: not an API.
foreach(header IN ITEMS kiln/detail/half.hpp kiln/detail/driver.hpp kiln/detail/activity_hook.hpp
                        kiln/detail/cuda_include.hpp half.hpp driver.hpp activity_hook.hpp)
    if(EXISTS ${PREFIX}/include/${header})
        message(FATAL_ERROR "a header only Kiln's tests use is installed: ${header}")
    endif()
endforeach()
file(REMOVE_RECURSE ${PREFIX})
