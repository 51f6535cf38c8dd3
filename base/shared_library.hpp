#pragma once
// A shared library opened at run time (dlopen) rather than linked: what NVRTC, nvJitLink, OpenSSL,
// libsodium and cuBLAS are to Kiln, so that a process pays for loading them only when it uses them.

#include <string>
#include <vector>

namespace kiln::detail {

/// A library looked up under each of its candidate names in turn (a SONAME goes through
/// LD_LIBRARY_PATH and the loader's cache, a path is opened as it is); kept open for the life of
/// the process.
class SharedLibrary {
  public:
    /// Opens the first candidate that opens; failure is kept, not thrown, and reported by
    /// symbol(). @p install_hint ends the message when none opens ("install ...").
    SharedLibrary(const std::vector<std::string>& candidates, const std::string& install_hint);

    /// The library by its SONAME first, then at @p built_path (where the build found it).
    SharedLibrary(const char* soname, const char* built_path, const char* install_hint)
        : SharedLibrary(std::vector<std::string>{soname, built_path}, install_hint) {}

    /// True when the library is open.
    bool is_open() const { return m_handle != nullptr; }

    /// The candidate that opened (empty when none did).
    const std::string& name() const { return m_name; }

    /// The address of @p name in the library.
    /// @throws Error when the library did not open (each candidate and why, and the install
    ///         hint) or lacks @p name (it is older than the headers Kiln was built with).
    void* symbol(const char* name) const;

  private:
    void* m_handle = nullptr;
    std::string m_name;
    std::string m_failure; // empty when open
};

} // namespace kiln::detail
