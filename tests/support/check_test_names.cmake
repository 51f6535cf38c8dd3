# cmake -DCTEST=... -DBUILD_DIR=... -P check_test_names.cmake
# Every CTest name is short and the same in every build: a value-parameterized test whose parameter
# GoogleTest cannot print gets its bytes (addresses included) appended to its name by
# gtest_discover_tests. `ctest -N` only lists, so this test listing itself is harmless.
execute_process(COMMAND ${CTEST} --test-dir ${BUILD_DIR} -N
                OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
    message(FATAL_ERROR "ctest -N failed in ${BUILD_DIR}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(bad "")
set(count 0)
foreach(line IN LISTS lines)
    if(NOT line MATCHES "^ *Test +#[0-9]+: (.*)$")
        continue()
    endif()
    set(name "${CMAKE_MATCH_1}")
    math(EXPR count "${count} + 1")
    string(LENGTH "${name}" length)
    if(name MATCHES "-byte object" OR length GREATER 150)
        string(APPEND bad "\n  ${name}")
    endif()
endforeach()
if(count LESS 10)
    message(FATAL_ERROR "only ${count} tests listed in ${BUILD_DIR}: is it the build tree?")
endif()
if(bad)
    message(FATAL_ERROR "test names with a parameter's bytes or over 150 characters (give the "
                        "parameter type a PrintTo):${bad}")
endif()
message(STATUS "${count} test names, all short and printable")
