# The API reference: `cmake --build <build> --target docs` runs Doxygen over the public headers,
# README.md and the manual's pages in docs/ (docs/Doxyfile.in) and writes HTML to
# <build>/docs/html. Optional: without Doxygen there is no docs target, and the build is otherwise
# the same.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
    message(STATUS "Doxygen not found: no docs target")
    return()
endif()

set(KILN_DOCS_OUTPUT_DIR ${PROJECT_BINARY_DIR}/docs)
# Every folder of public headers (KILN_PUBLIC_INCLUDE_DIRS), as Doxygen lists: the headers' folders
# to read, and the include roots to strip so pages name <kiln/array.hpp> as user code includes it.
set(KILN_DOXYGEN_INPUT "")
set(KILN_DOXYGEN_STRIP "")
# The manual's pages, so the README's links to them resolve and the reference carries them.
file(GLOB kiln_doc_pages CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
list(SORT kiln_doc_pages)
foreach(page IN LISTS kiln_doc_pages)
    string(APPEND KILN_DOXYGEN_INPUT " \\\n                         ${page}")
endforeach()
foreach(dir IN LISTS KILN_PUBLIC_INCLUDE_DIRS)
    string(APPEND KILN_DOXYGEN_INPUT " \\\n                         ${dir}/kiln")
    string(APPEND KILN_DOXYGEN_STRIP " \\\n                         ${dir}")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${KILN_DOCS_OUTPUT_DIR}/Doxyfile @ONLY)
# Runs every time it is asked for (about 2 s). Any warning fails it (WARN_AS_ERROR =
# FAIL_ON_WARNINGS, after all are printed): every public function, type and parameter must be
# documented.
add_custom_target(docs
    COMMAND ${DOXYGEN_EXECUTABLE} ${KILN_DOCS_OUTPUT_DIR}/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "API reference (Doxygen) in ${KILN_DOCS_OUTPUT_DIR}/html"
    VERBATIM)
