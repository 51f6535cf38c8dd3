#pragma once
/// @file
/// Kiln's exception hierarchy. Every error a user can see derives from kiln::Error and says what
/// to do about it. None of these types needs CUDA headers, so they live in the lowest layer.

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

/// Base of every exception Kiln throws.
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// An environment variable or option value that cannot be parsed; the message names it.
class ConfigError : public Error {
  public:
    using Error::Error;
};

/// A CUDA driver call failed. Carries the call text, the code, its name and description.
class CudaError : public Error {
  public:
    /// Usually made by the `KILN_CU` macro, which fills in the call text, file and line.
    /// @param call the call as written, e.g. `"cuMemAlloc(&ptr, bytes)"`.
    /// @param code the CUresult it returned.
    /// @param code_name the code's name, e.g. `"CUDA_ERROR_OUT_OF_MEMORY"`.
    /// @param description the driver's text for the code.
    /// @param file the source file of the call.
    /// @param line the line of the call.
    CudaError(std::string call, int code, std::string code_name, const std::string& description,
              const char* file, int line);
    /// The call as written in the source.
    /// @return the call as written in the source.
    const std::string& call() const noexcept { return m_call; }
    /// The driver's CUresult.
    /// @return the driver's CUresult, as an int.
    int code() const noexcept { return m_code; }
    /// The code's name.
    /// @return the code's name, e.g. `"CUDA_ERROR_INVALID_VALUE"`.
    const std::string& code_name() const noexcept { return m_code_name; }

  protected:
    /// As above, with @p advice (what to do about it) appended to the message.
    /// @param call the call as written.
    /// @param code the CUresult it returned.
    /// @param code_name the code's name.
    /// @param description the driver's text for the code.
    /// @param file the source file of the call.
    /// @param line the line of the call.
    /// @param advice what to do about it.
    CudaError(std::string call, int code, std::string code_name, const std::string& description,
              const char* file, int line, const std::string& advice);

  private:
    std::string m_call;
    int m_code;
    std::string m_code_name;
};

/// A call that a stream capture refuses (the driver's CUDA_ERROR_STREAM_CAPTURE_* and
/// CUDA_ERROR_CAPTURED_EVENT codes, or a Kiln call that would synchronize with a stream being
/// captured, refused before it reaches the driver). The message names the call, says that a
/// stream is being captured into a graph, and what to do instead (docs/graphs.md).
class CaptureError : public CudaError {
  public:
    /// @param call the call as written, led by the Kiln call that made it where known.
    /// @param code the CUresult (900-908).
    /// @param code_name the code's name.
    /// @param description the driver's text for the code.
    /// @param file the source file of the call.
    /// @param line the line of the call.
    CaptureError(std::string call, int code, std::string code_name, const std::string& description,
                 const char* file, int line);
};

/// No usable CUDA driver or device: the message names what is missing. Compiling still works.
class NoDeviceError : public Error {
  public:
    using Error::Error;
};

/// The first error in an NVRTC log, as NVRTC writes it: `file(line): error: message`,
/// `file(line): catastrophic error: message` (a missing header, an `#error`), or
/// `nvrtc: error: message` (an option). Warnings are skipped.
/// @param log NVRTC's log.
/// @return that line, or an empty string when the log holds no error.
std::string first_compile_error(const std::string& log);

/// NVRTC rejected a program. Carries the log, the options and the numbered source.
class CompileError : public Error {
  public:
    /// what() is @p summary, then the options, the log and the numbered source.
    /// @param summary the first line: what went wrong.
    /// @param log NVRTC's log.
    /// @param options the options the program was compiled with.
    /// @param source the program's source.
    CompileError(const std::string& summary, std::string log, std::vector<std::string> options,
                 std::string source);
    /// NVRTC's log.
    /// @return NVRTC's log, with its errors and warnings.
    const std::string& log() const noexcept { return m_log; }
    /// The options the program was compiled with.
    /// @return the options the program was compiled with.
    const std::vector<std::string>& options() const noexcept { return m_options; }
    /// The program's source.
    /// @return the program's source, as handed to NVRTC.
    const std::string& source() const noexcept { return m_source; }
    /// The source with 1-based line numbers, as printed in what().
    /// @return the numbered source.
    std::string numbered_source() const;
    /// NVRTC's first error, as first_compile_error() finds it in the log.
    /// @return a line such as `kiln_1f2e.cu(12): error: identifier "nosuch" is undefined`, or
    /// an empty string when the log holds no error.
    std::string first_error() const { return first_compile_error(m_log); }

  private:
    std::string m_log;
    std::vector<std::string> m_options;
    std::string m_source;
};

/// A launch or call that cannot be made as asked: wrong argument count or size, block or grid out
/// of the device's limits, an unknown kernel name, a file that is not a module.
class ArgumentError : public Error {
  public:
    using Error::Error;
};

/// An axis out of range for the array's dimensions, or given twice (NumPy's AxisError).
class AxisError : public ArgumentError {
  public:
    using ArgumentError::ArgumentError;
};

/// A C++ scalar whose value the type it is converted to cannot hold (NumPy 2's OverflowError):
/// `300` for an int8 parameter, `-1` added to a uint8 array. The message names the value, the
/// type and the parameter or operation.
class OverflowError : public ArgumentError {
  public:
    using ArgumentError::ArgumentError;
};

/// An operation NumPy does not define for its operands' dtypes (NumPy's TypeError): a bitwise
/// operation on floating values, floor division of complex values, a boolean subtract. The message
/// names the operation and the dtypes.
class DTypeError : public ArgumentError {
  public:
    using ArgumentError::ArgumentError;
};

/// A parameter spec that does not parse; the message shows the spec with a caret at the fault.
class SpecError : public Error {
  public:
    using Error::Error;
};

/// Shapes that do not fit together (broadcasting, outputs of the wrong shape).
class ShapeError : public Error {
  public:
    using Error::Error;
};

/// Number the lines of @p source from 1, right-aligned, as compilers print them.
/// @param source any text.
/// @return the text with a line number before each line.
std::string number_lines(const std::string& source);

} // namespace kiln
