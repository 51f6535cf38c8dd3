# cmake -DSTEP=reset|left_empty -DROOT=... -DNAMES=a,b,... -P test_tmp.cmake
# reset: an empty TMPDIR for each test suite under ROOT. left_empty: fail, naming what is left, when
# a suite's tests left anything in theirs (a leaked temporary directory or file).
string(REPLACE "," ";" names "${NAMES}")
if(STEP STREQUAL "reset")
    file(REMOVE_RECURSE ${ROOT})
    foreach(name IN LISTS names)
        file(MAKE_DIRECTORY ${ROOT}/${name})
    endforeach()
    return()
endif()
if(NOT STEP STREQUAL "left_empty")
    message(FATAL_ERROR "STEP must be reset or left_empty, not '${STEP}'")
endif()
file(GLOB_RECURSE left RELATIVE ${ROOT} LIST_DIRECTORIES true ${ROOT}/*)
list(REMOVE_ITEM left ${names})
# Known, and not this check's to fix: KILN_COMPILE_TIME_TRACE without a writable cache falls back to
# a fixed $TMPDIR/kiln-time-trace folder (runtime/compile_trace.cpp) that its test empties but keeps.
# Only the empty folder is let through; a trace left in it still fails.
list(REMOVE_ITEM left test_compile_time_trace/kiln-time-trace)
if(left)
    list(SORT left)
    list(JOIN left "\n  " shown)
    message(FATAL_ERROR "the tests left these in their TMPDIR (${ROOT}):\n  ${shown}")
endif()
list(LENGTH names count)
message(STATUS "${count} test TMPDIRs under ${ROOT}, all empty")
