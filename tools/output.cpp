// Output shared by the `kiln` commands (output.hpp).

#include "output.hpp"

#include "compile_error.hpp"

#include "kiln/error.hpp"

#include <cerrno>
#include <cstdio>
#include <iostream>

namespace kiln::tools {

namespace {
bool g_json_errors = false;
} // namespace

std::string json_text(const nlohmann::json& value, int indent) {
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void print_json(const nlohmann::json& value) {
    std::cout << json_text(value, 2) << '\n';
}

void set_json_errors(bool on) {
    g_json_errors = on;
}

std::string error_kind(const std::exception& error) {
    if (auto* detailed = dynamic_cast<const DetailedError*>(&error)) return detailed->kind();
    if (dynamic_cast<const CompileError*>(&error)) return "compile";
    if (dynamic_cast<const ConfigError*>(&error)) return "config";
    if (dynamic_cast<const ArgumentError*>(&error)) return "argument";
    if (dynamic_cast<const NoDeviceError*>(&error)) return "no_device";
    return "error";
}

int report_error(const std::exception& error, const nlohmann::json& details) {
    std::cout.flush();
    std::fflush(stdout);
    std::cerr << "kiln: " << error.what() << '\n';
    if (g_json_errors) {
        nlohmann::json j{{"error", error.what()}, {"kind", error_kind(error)}};
        if (auto* detailed = dynamic_cast<const DetailedError*>(&error))
            j.update(detailed->details());
        if (details.is_object()) j.update(details);
        print_json(j);
    }
    return 1;
}

int stdout_error() {
    errno = 0;
    std::cout.flush(); // synchronized with stdio: this flushes stdout, and may set errno
    const bool flushed = std::fflush(stdout) == 0;
    const int error = errno;
    if (flushed && !std::ferror(stdout) && std::cout.good()) return 0;
    return error != 0 ? error : EIO;
}

} // namespace kiln::tools
