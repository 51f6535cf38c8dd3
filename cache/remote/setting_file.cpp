#include "setting_file.hpp"

#include "kiln/error.hpp"

#include "local/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kiln::cache::detail {

std::string read_setting_file(std::string_view variable, const std::string& path,
                              std::string_view holds, std::uint64_t max_size, bool secret) {
    const std::string named = std::string(variable) + "='" + path + "'";
    // O_NONBLOCK: a FIFO at that path must not hang every command at start-up (a regular file
    // ignores the flag); anything but a regular file is refused on the descriptor opened.
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    std::string bytes;
    struct stat st {};
    int error = fd ? (::fstat(fd.get(), &st) != 0 ? errno : 0) : errno;
    if (!error && !S_ISREG(st.st_mode))
        throw ConfigError(named + " is not a regular file: give a file that holds " +
                          std::string(holds));
    if (!error && secret && (st.st_mode & (S_IRWXG | S_IRWXO))) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
        throw ConfigError(named + " may be read or written by other users (mode " + mode +
                          "): chmod 600 it");
    }
    if (!error) error = read_all(fd.get(), max_size, bytes);
    if (error)
        throw ConfigError(named + " cannot be read (" + std::strerror(error) +
                          "): give a readable file that holds " + std::string(holds));
    return bytes;
}

} // namespace kiln::cache::detail
