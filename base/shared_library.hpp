#pragma once
// A shared library opened at run time (dlopen) rather than linked: what NVRTC, nvJitLink, OpenSSL
// and libsodium are to Kiln, so that a process pays for loading them only when it uses them.

#include <string>

namespace kiln::detail {

/// A library looked up by its SONAME first (LD_LIBRARY_PATH and the loader's cache), then at
/// @p built_path (where the build found it); kept open for the life of the process.
class SharedLibrary {
  public:
    /// Opens the library; failure is kept, not thrown, and reported by symbol().
    /// @p install_hint ends the message when neither name opens ("install ...").
    SharedLibrary(const char* soname, const char* built_path, const char* install_hint);

    /// True when the library is open.
    bool is_open() const { return m_handle != nullptr; }

    /// The address of @p name in the library.
    /// @throws Error when the library did not open (why, and @p install_hint) or lacks @p name
    ///         (it is older than the headers Kiln was built with).
    void* symbol(const char* name) const;

  private:
    void* m_handle = nullptr;
    std::string m_soname;
    std::string m_failure; // empty when open
};

} // namespace kiln::detail
