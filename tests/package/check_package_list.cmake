# cmake -DSOURCE_DIR=... -P check_package_list.cmake
# The README's list of the packages scripts/setup.sh installs must be the lists setup.sh installs
# (with and without --tests): a newcomer reads the README first.
file(READ ${SOURCE_DIR}/README.md readme)
file(READ ${SOURCE_DIR}/scripts/setup.sh setup)

function(package_words text out)
    string(REGEX REPLACE "[ \t\r\n]+" ";" words "${text}")
    list(REMOVE_ITEM words "")
    list(SORT words)
    set(${out} "${words}" PARENT_SCOPE)
endfunction()

# The list may be split into several code spans (`a b` `c d`): a Markdown code span that runs
# over more than two lines does not render in the API reference's main page.
if(NOT readme MATCHES "installs Debian packages only \\((`[^)]*`)\\)")
    message(FATAL_ERROR "README.md: no \"installs Debian packages only (`...`)\" list")
endif()
string(REPLACE "`" " " readme_list "${CMAKE_MATCH_1}")
string(STRIP "${readme_list}" readme_list)
package_words("${readme_list}" from_readme)

# setup.sh's two lists together: packages=(...) for the library and the tool, test_packages=(...)
# for the tests, benchmarks and API reference (installed with --tests).
if(NOT setup MATCHES "\npackages=\\(([^)]*)\\)")
    message(FATAL_ERROR "scripts/setup.sh: no packages=(...) list")
endif()
set(setup_list "${CMAKE_MATCH_1}")
if(NOT setup MATCHES "\ntest_packages=\\(([^)]*)\\)")
    message(FATAL_ERROR "scripts/setup.sh: no test_packages=(...) list")
endif()
package_words("${setup_list} ${CMAKE_MATCH_1}" from_setup)

if(NOT from_readme STREQUAL from_setup)
    set(only_readme ${from_readme})
    list(REMOVE_ITEM only_readme ${from_setup})
    set(only_setup ${from_setup})
    list(REMOVE_ITEM only_setup ${from_readme})
    message(FATAL_ERROR "README.md and scripts/setup.sh list different packages\n"
                        "  only in README.md: ${only_readme}\n"
                        "  only in scripts/setup.sh: ${only_setup}")
endif()
message(STATUS "README.md and scripts/setup.sh agree: ${from_setup}")
