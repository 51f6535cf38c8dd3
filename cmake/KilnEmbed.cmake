# kiln_embed_headers(OUTPUT BASE_DIR FUNCTION FILES...): write a .cpp defining
# kiln::detail::FUNCTION() with each file's path (relative to BASE_DIR) and content.
function(kiln_embed_headers output base_dir function)
    set(body "")
    foreach(file IN LISTS ARGN)
        set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
        file(READ ${file} content)
        file(RELATIVE_PATH name ${base_dir} ${file})
        string(APPEND body "        {\"${name}\", R\"KILN_EMBED(${content})KILN_EMBED\"},\n")
    endforeach()
    file(CONFIGURE OUTPUT ${output} CONTENT
"// Generated from kernels/device/ by cmake/KilnEmbed.cmake: do not edit.
#include \"core/device_headers.hpp\"

namespace kiln::detail {

const std::vector<Header>& ${function}() {
    static const std::vector<Header> headers = {
${body}    };
    return headers;
}

} // namespace kiln::detail
" @ONLY)
endfunction()

# kiln_embed_file(OUTPUT FILE FUNCTION): write a .cpp defining std::string_view
# kiln::cache::detail::FUNCTION() with FILE's bytes (any bytes: written as a hex array).
function(kiln_embed_file output file function)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    file(READ ${file} hex HEX)
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
    string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes "${bytes}")
    file(RELATIVE_PATH name ${PROJECT_SOURCE_DIR} ${file})
    file(CONFIGURE OUTPUT ${output} CONTENT
"// Generated from ${name} by cmake/KilnEmbed.cmake: do not edit.
#include <string_view>

namespace kiln::cache::detail {

namespace {
const unsigned char kBytes[] = {
    ${bytes}};
} // namespace

std::string_view ${function}() {
    return {reinterpret_cast<const char*>(kBytes), sizeof kBytes};
}

} // namespace kiln::cache::detail
" @ONLY)
endfunction()
