#pragma once
/// @file
/// Every environment variable Kiln reads at run time, defined once in one table
/// (`base/settings.cpp`): its name, type, default, allowed values and a line of documentation.
/// The code reads a variable through a typed accessor and never by name; `kiln help environment`
/// and `docs/environment.md` print the same table, so the code, the docs and the help cannot
/// disagree.
///
/// An unset or empty variable has the table's default. A value that does not parse, or is out of
/// its range, is a kiln::ConfigError naming the variable, never a silent default. The accessors
/// read the environment on every call (a `getenv` and a parse, no allocation beyond the value's
/// text); code that reads a variable on a hot path keeps the value in a static.
///
/// @code
/// const bool lineinfo = kiln::settings::flag(kiln::Variable::lineinfo);
/// const std::uint64_t limit = kiln::settings::size(kiln::Variable::cache_max_size);
/// @endcode

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

/// One environment variable Kiln reads; its name is `KILN_` and the enumerator in capitals.
enum class Variable : std::uint8_t {
    cache_dir,                    ///< KILN_CACHE_DIR
    cache_max_size,               ///< KILN_CACHE_MAX_SIZE
    cache_disable,                ///< KILN_CACHE_DISABLE
    cache_readonly,               ///< KILN_CACHE_READONLY
    cache_shared,                 ///< KILN_CACHE_SHARED
    cache_save_source,            ///< KILN_CACHE_SAVE_SOURCE
    read_ahead,                   ///< KILN_READ_AHEAD
    signing_key_file,             ///< KILN_SIGNING_KEY_FILE
    trusted_keys,                 ///< KILN_TRUSTED_KEYS
    compile_wait,                 ///< KILN_COMPILE_WAIT
    lineinfo,                     ///< KILN_LINEINFO
    nvrtc_cache,                  ///< KILN_NVRTC_CACHE
    dump_source_on_error,         ///< KILN_DUMP_SOURCE_ON_ERROR
    compile_time_trace,           ///< KILN_COMPILE_TIME_TRACE
    cuda_include,                 ///< KILN_CUDA_INCLUDE
    cuda_device_runtime,          ///< KILN_CUDA_DEVICE_RUNTIME
    driver_library,               ///< KILN_DRIVER_LIBRARY
    driver_trace,                 ///< KILN_DRIVER_TRACE
    cublas_library,               ///< KILN_CUBLAS_LIBRARY
    block_cache,                  ///< KILN_BLOCK_CACHE
    context_warm_up,              ///< KILN_CONTEXT_WARM_UP
    log_level,                    ///< KILN_LOG_LEVEL
    remote_cache,                 ///< KILN_REMOTE_CACHE
    remote_cache_mode,            ///< KILN_REMOTE_CACHE_MODE
    remote_cache_password_file,   ///< KILN_REMOTE_CACHE_PASSWORD_FILE
    remote_cache_ca_file,         ///< KILN_REMOTE_CACHE_CA_FILE
    remote_cache_cert_file,       ///< KILN_REMOTE_CACHE_CERT_FILE
    remote_cache_key_file,        ///< KILN_REMOTE_CACHE_KEY_FILE
    remote_cache_ttl,             ///< KILN_REMOTE_CACHE_TTL
    remote_cache_connect_timeout, ///< KILN_REMOTE_CACHE_CONNECT_TIMEOUT
    remote_cache_timeout,         ///< KILN_REMOTE_CACHE_TIMEOUT
    remote_cache_retry,           ///< KILN_REMOTE_CACHE_RETRY
};

namespace settings {

/// What a variable's value is, which decides how it is parsed.
enum class Type : std::uint8_t {
    /// `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`, any case.
    flag,
    /// A number of bytes, or with a binary suffix `K`, `M`, `G` or `T` (`500M`, `2GiB`).
    size,
    /// A number with `ms`, `s`, `m`, `h` or `d`; a bare number is in Definition::bare_unit.
    duration,
    /// One of Definition::choices, exactly as spelled there.
    choice,
    /// Free text that the code reading it checks (a URL).
    text,
    /// A file, directory or library name, used as given.
    path,
};

/// The type's name as the docs print it.
/// @param type the type.
/// @return `"flag"`, `"size"`, `"duration"`, `"choice"`, `"text"` or `"path"` (a static string).
const char* type_name(Type type) noexcept;

/// One row of the table: everything about one variable.
struct Definition {
    Variable variable; ///< its enumerator (rows are in the enumerators' order)
    const char* name;  ///< e.g. `"KILN_LINEINFO"`
    Type type;         ///< how the value is parsed
    /// The default as the variable would spell it (`"1"`, `"2G"`, `"50ms"`, `"warn"`); empty
    /// where there is none and the code finds one itself (see #when_unset).
    const char* default_text;
    /// What an unset variable means where #default_text does not say it all (a default the code
    /// finds, or one a settings file may change); empty otherwise.
    const char* when_unset;
    const char* description;                    ///< one line, Markdown (code in backticks)
    bool default_flag;                          ///< the default of a Type::flag
    std::uint64_t default_size;                 ///< the default of a Type::size, in bytes
    std::chrono::milliseconds default_duration; ///< the default of a Type::duration
    /// A Type::duration: a bare number counts in this unit (1 ms or 1 s).
    std::chrono::milliseconds bare_unit;
    /// A Type::duration: the least value accepted (zero, or 1 ms for "positive").
    std::chrono::milliseconds minimum;
    /// A Type::duration: values must be whole multiples of this (1 s where only seconds are kept).
    std::chrono::milliseconds step;
    /// A Type::duration: the greatest value accepted (a deadline of days is no deadline, and a
    /// retry interval of years would overflow the clock it is added to).
    std::chrono::milliseconds maximum;
    /// A Type::choice: the values accepted, separated by `|` (`"read-write|read-only"`).
    const char* choices;
    /// A Type::text or Type::path: the form of the value, Markdown (`"a directory"`).
    const char* syntax;
};

/// The rows of the table, for iteration (`for (const Definition& d : settings::all())`).
struct Rows {
    const Definition* first; ///< the first row
    const Definition* last;  ///< one past the last row
    /// The first row.
    /// @return the first row.
    const Definition* begin() const noexcept { return first; }
    /// One past the last row.
    /// @return one past the last row.
    const Definition* end() const noexcept { return last; }
    /// The number of rows.
    /// @return the number of rows, one per Variable.
    std::size_t size() const noexcept { return static_cast<std::size_t>(last - first); }
};

/// Every variable, in the table's order (the order of Variable).
/// @return the rows; they live as long as the program.
Rows all() noexcept;

/// The row of one variable.
/// @param variable the variable.
/// @return its row; it lives as long as the program.
const Definition& definition(Variable variable) noexcept;

/// The row of a variable by its name.
/// @param name e.g. `"KILN_CACHE_DIR"`.
/// @return its row, or nullptr when the table has no such variable.
const Definition* find(std::string_view name) noexcept;

/// The variable's text as set, unchecked: for messages, and to tell whether it is set at all.
/// @param variable the variable.
/// @return its value, or nullopt when it is unset or empty.
std::optional<std::string> raw(Variable variable);

/// A Type::flag's value.
/// @param variable the variable, of Type::flag.
/// @return its value, or Definition::default_flag when unset or empty.
/// @throws ConfigError naming the variable when the value is not a flag; kiln::Error when the
/// variable is not a flag (a bug in the caller).
bool flag(Variable variable);

/// A Type::size's value.
/// @param variable the variable, of Type::size.
/// @return its value in bytes, or Definition::default_size when unset or empty.
/// @throws ConfigError naming the variable when the value is not a size; kiln::Error when the
/// variable is not a size.
std::uint64_t size(Variable variable);

/// A Type::duration's value, checked against Definition::minimum and Definition::step.
/// @param variable the variable, of Type::duration.
/// @return its value, or Definition::default_duration when unset or empty.
/// @throws ConfigError naming the variable when the value is not a duration or is out of range;
/// kiln::Error when the variable is not a duration.
std::chrono::milliseconds duration(Variable variable);

/// The value of a Type::text, Type::path or Type::choice (checked against the choices).
/// @param variable the variable.
/// @return its value, or Definition::default_text when unset or empty (an empty string where the
/// table has no default: the code finds one).
/// @throws ConfigError naming the variable when a choice is not one of its choices; kiln::Error
/// when the variable is a flag, size or duration.
std::string text(Variable variable);

/// Parse a variable whatever its type, and drop the value: what `kiln` does before every command.
/// @param variable the variable.
/// @throws ConfigError naming the variable when its value does not parse.
void check(Variable variable);

/// The allowed values as the docs print them: the flag words, the size and duration syntax with
/// the range, the choices, or Definition::syntax.
/// @param definition the row.
/// @return the text, Markdown (code in backticks).
std::string range_text(const Definition& definition);

/// The default as the docs print it: Definition::when_unset where set, else
/// Definition::default_text in backticks, else `none`.
/// @param definition the row.
/// @return the text, Markdown.
std::string default_shown(const Definition& definition);

/// `docs/environment.md`: the table as a Markdown page, as `kiln help environment --markdown`
/// prints it (a test keeps the file equal to it).
/// @return the page.
std::string markdown();

} // namespace settings
} // namespace kiln
