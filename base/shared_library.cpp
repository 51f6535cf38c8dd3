#include "shared_library.hpp"

#include "kiln/error.hpp"
#include "kiln/log.hpp"

#include <dlfcn.h>

namespace kiln::detail {

namespace {

std::string dl_failure() {
    const char* why = dlerror();
    return why ? why : "unknown reason";
}

} // namespace

SharedLibrary::SharedLibrary(const char* soname, const char* built_path, const char* install_hint)
    : m_soname(soname) {
    m_handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (m_handle) {
        logger().debug("opened {}", soname);
        return;
    }
    const std::string first = dl_failure();
    m_handle = dlopen(built_path, RTLD_NOW | RTLD_LOCAL);
    if (m_handle) {
        logger().debug("opened {}", built_path);
        return;
    }
    m_failure = m_soname + " could not be opened (" + first + "; " + built_path + ": " +
                dl_failure() + "): " + install_hint;
}

void* SharedLibrary::symbol(const char* name) const {
    if (!m_handle) throw Error(m_failure);
    void* address = dlsym(m_handle, name);
    if (!address)
        throw Error("the " + m_soname + " in use lacks " + name +
                    ": it is older than the headers Kiln was built with; update it");
    return address;
}

} // namespace kiln::detail
