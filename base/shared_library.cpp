#include "shared_library.hpp"

#include "kiln/error.hpp"
#include "log_line.hpp"

#include <dlfcn.h>

namespace kiln::detail {

SharedLibrary::SharedLibrary(const std::vector<std::string>& candidates,
                             const std::string& install_hint) {
    std::string tried;
    for (const std::string& candidate : candidates) {
        m_handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (m_handle) {
            m_name = candidate;
            kiln::detail::log_debug("opened {}", candidate);
            return;
        }
        const char* why = dlerror();
        // The first candidate names the library; the others are the places tried after it.
        if (!tried.empty()) tried += "; " + candidate + ": ";
        tried += why ? why : "unknown reason";
    }
    m_failure = (candidates.empty() ? std::string("a library") : candidates.front()) +
                " could not be opened (" + tried + "): " + install_hint;
}

void* SharedLibrary::symbol(const char* name) const {
    if (!m_handle) throw Error(m_failure);
    void* address = dlsym(m_handle, name);
    if (!address)
        throw Error("the " + m_name + " in use lacks " + name +
                    ": it is older than the headers Kiln was built with; update it");
    return address;
}

} // namespace kiln::detail
