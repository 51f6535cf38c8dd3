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
