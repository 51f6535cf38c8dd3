#include "kiln/error.hpp"

#include <cstdio>
#include <sstream>
#include <string_view>

namespace kiln {

namespace {
std::string cuda_message(const std::string& call, int code, const std::string& name,
                         const std::string& description, const char* file, int line) {
    std::ostringstream out;
    out << "CUDA call failed: " << call << " returned " << name << " (" << code
        << "): " << description;
    if (file) out << " [" << file << ":" << line << "]";
    return out.str();
}

std::string compile_message(const std::string& summary, const std::string& log,
                            const std::vector<std::string>& options, const std::string& source) {
    std::ostringstream out;
    out << summary << "\n--- NVRTC log ---\n" << log << "\n--- options ---\n";
    for (const auto& option : options)
        out << ' ' << option;
    out << "\n--- source ---\n" << number_lines(source);
    return out.str();
}
} // namespace

CudaError::CudaError(std::string call, int code, std::string code_name,
                     const std::string& description, const char* file, int line)
    : CudaError(std::move(call), code, std::move(code_name), description, file, line, {}) {}

CudaError::CudaError(std::string call, int code, std::string code_name,
                     const std::string& description, const char* file, int line,
                     const std::string& advice)
    : Error(cuda_message(call, code, code_name, description, file, line) + advice)
    , m_call(std::move(call))
    , m_code(code)
    , m_code_name(std::move(code_name)) {}

CaptureError::CaptureError(std::string call, int code, std::string code_name,
                           const std::string& description, const char* file, int line)
    : CudaError(std::move(call), code, std::move(code_name), description, file, line,
                ": a stream is being captured into a CUDA graph (kiln::Graph::capture or the "
                "application's own cuStreamBeginCapture), and the capture refuses this call (it "
                "synchronizes with, queries or copies to the host from captured work, or runs on "
                "another thread or stream the capture does not allow); do it before or after the "
                "capture (docs/graphs.md)") {}

CompileError::CompileError(const std::string& summary, std::string log,
                           std::vector<std::string> options, std::string source)
    : Error(compile_message(summary, log, options, source))
    , m_log(std::move(log))
    , m_options(std::move(options))
    , m_source(std::move(source)) {}

std::string CompileError::numbered_source() const {
    return number_lines(m_source);
}

std::string first_compile_error(const std::string& log) {
    for (std::size_t start = 0; start < log.size();) {
        std::size_t end = log.find('\n', start);
        if (end == std::string::npos) end = log.size();
        const std::string_view line(log.data() + start, end - start);
        // "x.cu(3): error: ", "nvrtc: error: ", "x.cu(1): catastrophic error: "; never a
        // warning, nor a source line NVRTC quotes that happens to say "error: ".
        for (std::string_view marker : {": error: ", " catastrophic error: "})
            if (line.find(marker) != std::string_view::npos && line.front() != ' ')
                return std::string(line);
        start = end + 1;
    }
    return {};
}

std::string number_lines(const std::string& source) {
    std::size_t lines = 1;
    for (char c : source)
        lines += (c == '\n');
    const int width = static_cast<int>(std::to_string(lines).size());
    std::ostringstream out;
    std::size_t number = 1, start = 0;
    while (start <= source.size()) {
        std::size_t end = source.find('\n', start);
        if (end == std::string::npos) end = source.size();
        if (start == source.size() && start != 0) break; // no empty line after a final newline
        char prefix[32];
        std::snprintf(prefix, sizeof prefix, "%*zu | ", width, number++);
        out << prefix << source.substr(start, end - start) << '\n';
        start = end + 1;
    }
    return out.str();
}

} // namespace kiln
