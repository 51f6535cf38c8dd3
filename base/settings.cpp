// The one table of Kiln's environment variables (kiln/settings.hpp). Each variable is defined here
// once, with its type, default, range and documentation; the code reads it through the typed
// accessors below, and `kiln help environment` and docs/environment.md print this same table. A
// variable read by name in many files had drifted: one default written three times, one variable
// documented nowhere, each duration parsed by its own reader. To add a variable, add an enumerator
// to Variable and a row here, in the same place, then regenerate docs/environment.md with
// `kiln help environment --markdown` (a test fails until the page matches).

#include "kiln/settings.hpp"

#include "kiln/env.hpp"
#include "kiln/error.hpp"

#include <cctype>

namespace kiln::settings {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kZero{0};
constexpr milliseconds kMillisecond{1};
constexpr milliseconds kSecond{1000};
constexpr milliseconds kMinute{60000};
constexpr milliseconds kDay{86400000};

// The fields every row has; the others stay empty (zero, or "" for text).
constexpr Definition row(Variable variable, const char* name, Type type, const char* description) {
    Definition d{};
    d.variable = variable;
    d.name = name;
    d.type = type;
    d.default_text = "";
    d.when_unset = "";
    d.description = description;
    d.choices = "";
    d.syntax = "";
    return d;
}

constexpr Definition flag_row(Variable variable, const char* name, bool fallback,
                              const char* description) {
    Definition d = row(variable, name, Type::flag, description);
    d.default_text = fallback ? "1" : "0";
    d.default_flag = fallback;
    return d;
}

constexpr Definition size_row(Variable variable, const char* name, const char* default_text,
                              std::uint64_t fallback, const char* when_unset,
                              const char* description) {
    Definition d = row(variable, name, Type::size, description);
    d.default_text = default_text;
    d.default_size = fallback;
    d.when_unset = when_unset;
    return d;
}

// @p minimum, @p maximum and @p step are the range: kMillisecond for "positive", kSecond for
// whole seconds.
constexpr Definition duration_row(Variable variable, const char* name, const char* default_text,
                                  milliseconds fallback, milliseconds bare_unit,
                                  milliseconds minimum, milliseconds step, milliseconds maximum,
                                  const char* description) {
    Definition d = row(variable, name, Type::duration, description);
    d.default_text = default_text;
    d.default_duration = fallback;
    d.bare_unit = bare_unit;
    d.minimum = minimum;
    d.step = step;
    d.maximum = maximum;
    return d;
}

constexpr Definition choice_row(Variable variable, const char* name, const char* default_text,
                                const char* choices, const char* description) {
    Definition d = row(variable, name, Type::choice, description);
    d.default_text = default_text;
    d.choices = choices;
    return d;
}

// Type::text or Type::path.
constexpr Definition text_row(Variable variable, const char* name, Type type,
                              const char* default_text, const char* when_unset, const char* syntax,
                              const char* description) {
    Definition d = row(variable, name, type, description);
    d.default_text = default_text;
    d.when_unset = when_unset;
    d.syntax = syntax;
    return d;
}

constexpr Definition kTable[] = {
    // The cache directory.
    text_row(Variable::cache_dir, "KILN_CACHE_DIR", Type::path, "",
             "`$XDG_CACHE_HOME/kiln`, else `~/.cache/kiln`", "a directory",
             "The cache directory, where compiled kernels are kept."),
    size_row(Variable::cache_max_size, "KILN_CACHE_MAX_SIZE", "2G", std::uint64_t{2} << 30,
             "the cache's `max-size` setting (`kiln cache config`), else `2G`",
             "Size limit of the cache directory, entries and sources together; `0`: no limit."),
    flag_row(Variable::cache_disable, "KILN_CACHE_DISABLE", false,
             "`1`: memory only; no cache directory and no remote tier."),
    flag_row(Variable::cache_readonly, "KILN_CACHE_READONLY", false,
             "`1`: read hits, never write to the cache."),
    flag_row(Variable::cache_shared, "KILN_CACHE_SHARED", false,
             "`1`: a group-writable team cache (directories `2770`, files `0660`)."),
    flag_row(Variable::cache_save_source, "KILN_CACHE_SAVE_SOURCE", false,
             "`1`: keep `<key>.cu` beside each entry (for Nsight Compute's source view)."),
    flag_row(Variable::read_ahead, "KILN_READ_AHEAD", true,
             "`0`: do not read ahead, at start-up, the kernels this program used last time, and "
             "file nothing for it."),
    text_row(Variable::signing_key_file, "KILN_SIGNING_KEY_FILE", Type::path, "", "none",
             "a private key from `kiln key generate` (mode `0600`)",
             "Sign every entry, memo and list this process publishes (directory, remote, "
             "archive)."),
    text_row(Variable::trusted_keys, "KILN_TRUSTED_KEYS", Type::path, "", "none",
             "a file of public keys, one per line (`NAME.pub` lines)",
             "Use an entry from a shared directory, the remote cache, an archive, or one that "
             "reached the private directory from elsewhere, only when one of these keys signed "
             "it; others are misses, counted `untrusted`."),
    duration_row(Variable::compile_wait, "KILN_COMPILE_WAIT", "10s", milliseconds(10000), kSecond,
                 kZero, kMillisecond, kMinute * 10,
                 "How long a process waits for another one (here, or another host through the "
                 "remote cache) compiling the same kernel, before it compiles it too; `0`: never "
                 "wait."),
    // Compiling.
    flag_row(Variable::lineinfo, "KILN_LINEINFO", true,
             "`0`: compile without `-lineinfo` (a compile's own option wins)."),
    flag_row(Variable::nvrtc_cache, "KILN_NVRTC_CACHE", false,
             "`1`: leave NVRTC's own cache (12.9+, in the driver's compute cache) on; Kiln passes "
             "`--no-cache` otherwise, since it caches the cubin itself."),
    flag_row(Variable::dump_source_on_error, "KILN_DUMP_SOURCE_ON_ERROR", false,
             "`1`: also log the numbered source of a program that fails to compile."),
    flag_row(Variable::compile_time_trace, "KILN_COMPILE_TIME_TRACE", false,
             "`1`: write NVRTC's time trace JSON beside each entry (such compiles bypass the "
             "cache)."),
    text_row(Variable::cuda_include, "KILN_CUDA_INCLUDE", Type::path, "",
             "the `include` folder beside the NVRTC library in use, else the toolkit Kiln was "
             "built with",
             "a directory",
             "The CUDA toolkit's headers that programs compile against (its `cccl` folder too)."),
    text_row(Variable::cuda_device_runtime, "KILN_CUDA_DEVICE_RUNTIME", Type::path, "",
             "`libcudadevrt.a` beside the NVRTC library in use, else the toolkit Kiln was built "
             "with",
             "a file",
             "The device runtime (`libcudadevrt.a`) that relocatable device code is linked with."),
    // The driver and device memory.
    text_row(Variable::driver_library, "KILN_DRIVER_LIBRARY", Type::path, "libcuda.so.1", "",
             "a library name or path, as `dlopen` takes it", "The CUDA driver library to open."),
    flag_row(Variable::driver_trace, "KILN_DRIVER_TRACE", false,
             "`1`: time every driver call Kiln makes and write it to standard error, with the "
             "host time since the previous one (Kiln's own work)."),
    text_row(Variable::cublas_library, "KILN_CUBLAS_LIBRARY", Type::path, "",
             "`libcublas.so.<major>` of the toolkit Kiln was built with, else by that name on the "
             "loader's search path",
             "a library name or path, as `dlopen` takes it",
             "The cuBLAS library `kiln::matmul` opens on its first call (never linked)."),
    flag_row(Variable::block_cache, "KILN_BLOCK_CACHE", true,
             "`0`: keep no freed device blocks per thread for reuse; every allocation and free "
             "goes to the driver's pool."),
    flag_row(Variable::context_warm_up, "KILN_CONTEXT_WARM_UP", true,
             "`0`: do not warm up a CUDA context Kiln creates, nor load the modules read ahead "
             "there."),
    // The log.
    choice_row(Variable::log_level, "KILN_LOG_LEVEL", "warn",
               "trace|debug|info|warn|warning|error|err|critical|off",
               "The level of Kiln's log (spdlog's logger `kiln`, on standard error)."),
    // The remote tier.
    text_row(Variable::remote_cache, "KILN_REMOTE_CACHE", Type::text, "", "no remote tier",
             "`redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS",
             "The Redis server of the remote cache tier, asked after the cache directory."),
    choice_row(Variable::remote_cache_mode, "KILN_REMOTE_CACHE_MODE", "read-write",
               "read-write|read-only|remote-only",
               "`read-only`: never publish; `remote-only`: no cache directory (memory, then "
               "Redis)."),
    text_row(Variable::remote_cache_password_file, "KILN_REMOTE_CACHE_PASSWORD_FILE", Type::path,
             "", "the URL's password, if any", "a file holding the password on one line",
             "The Redis password, kept out of the URL and the process list."),
    text_row(Variable::remote_cache_ca_file, "KILN_REMOTE_CACHE_CA_FILE", Type::path, "",
             "the system's certificate store", "a file of PEM certificates",
             "`rediss://` only: the certificates the server's must chain to."),
    text_row(Variable::remote_cache_cert_file, "KILN_REMOTE_CACHE_CERT_FILE", Type::path, "",
             "no client certificate", "a PEM certificate, then its chain",
             "`rediss://` only: the client certificate, for a server that asks for one (with "
             "`KILN_REMOTE_CACHE_KEY_FILE`)."),
    text_row(Variable::remote_cache_key_file, "KILN_REMOTE_CACHE_KEY_FILE", Type::path, "",
             "no client certificate", "an unencrypted PEM private key others cannot read",
             "`rediss://` only: the private key of `KILN_REMOTE_CACHE_CERT_FILE`."),
    duration_row(Variable::remote_cache_ttl, "KILN_REMOTE_CACHE_TTL", "0", kZero, kSecond, kZero,
                 kSecond, kDay * 3650,
                 "Expiry of published entries (Redis keeps seconds); `0`: none."),
    duration_row(Variable::remote_cache_connect_timeout, "KILN_REMOTE_CACHE_CONNECT_TIMEOUT",
                 "100ms", milliseconds(100), kMillisecond, kMillisecond, kMillisecond, kMinute * 10,
                 "Deadline for connecting to the server and authenticating."),
    duration_row(Variable::remote_cache_timeout, "KILN_REMOTE_CACHE_TIMEOUT", "50ms",
                 milliseconds(50), kMillisecond, kMillisecond, kMillisecond, kMinute * 10,
                 "Deadline of each operation (a lookup, a publish, a probe)."),
    duration_row(Variable::remote_cache_retry, "KILN_REMOTE_CACHE_RETRY", "30s",
                 milliseconds(30000), kSecond, kMillisecond, kMillisecond, kDay,
                 "How long a failing server is skipped before a background probe."),
};

constexpr std::size_t kCount = sizeof(kTable) / sizeof(kTable[0]);

// definition() indexes the table by the enumerator: the rows must follow Variable's order.
constexpr bool in_enum_order() {
    for (std::size_t i = 0; i < kCount; ++i)
        if (static_cast<std::size_t>(kTable[i].variable) != i) return false;
    return true;
}
static_assert(in_enum_order(), "kTable's rows must be in Variable's order, one per enumerator");
static_assert(static_cast<std::size_t>(Variable::remote_cache_retry) + 1 == kCount,
              "every Variable needs a row in kTable");

const Definition& of_type(Variable variable, Type type) {
    const Definition& d = definition(variable);
    if (d.type != type)
        throw Error(std::string(d.name) + " is a " + type_name(d.type) + ", not a " +
                    type_name(type) + " (a bug in Kiln)");
    return d;
}

std::string shown_duration(milliseconds value) {
    if (value.count() == 0) return "0";
    if (value.count() % kDay.count() == 0)
        return std::to_string(value.count() / kDay.count()) + "d";
    if (value.count() % kMinute.count() == 0 && value >= kMinute * 10)
        return std::to_string(value.count() / kMinute.count()) + "m";
    if (value.count() % 1000 == 0) return std::to_string(value.count() / 1000) + "s";
    return std::to_string(value.count()) + "ms";
}

// "250ms", "2s", "5m", "1h", "7d"; a bare number is in Definition::bare_unit. The number has at
// most nine digits, so that any unit times it fits.
milliseconds parse_duration(const Definition& d, const std::string& value) {
    std::size_t digits = 0;
    while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits])))
        ++digits;
    const std::string unit = value.substr(digits);
    const std::int64_t per_unit = unit.empty()   ? d.bare_unit.count()
                                  : unit == "ms" ? 1
                                  : unit == "s"  ? 1000
                                  : unit == "m"  ? 60000
                                  : unit == "h"  ? 3600000
                                  : unit == "d"  ? 86400000
                                                 : 0;
    const auto number = env::parse_decimal(std::string_view(value).substr(0, digits), 999999999);
    const milliseconds result(number ? static_cast<std::int64_t>(*number) * per_unit : 0);
    if (!number || per_unit == 0 || result < d.minimum)
        throw ConfigError(std::string(d.name) + "='" + value + "' is not a duration: use a " +
                          (d.minimum.count() > 0 ? "positive " : "") +
                          "number with ms, s, m, h or d (" +
                          (d.bare_unit == kSecond ? "a bare number is seconds"
                                                  : "a bare number is milliseconds") +
                          "), e.g. 250ms or 2s");
    if (result > d.maximum)
        throw ConfigError(std::string(d.name) + "='" + value + "' is more than " +
                          shown_duration(d.maximum) + ", the most it accepts");
    if (result.count() % d.step.count() != 0)
        throw ConfigError(
            std::string(d.name) + "='" + value + "' is not a whole number of " +
            (d.step == kSecond ? std::string("seconds") : shown_duration(d.step) + " steps"));
    return result;
}

// The choices as prose: "a, b or c", each in backticks when @p code.
std::string choice_list(const char* choices, bool code) {
    const std::string all = choices;
    std::string out;
    std::size_t start = 0;
    while (start <= all.size()) {
        std::size_t end = all.find('|', start);
        if (end == std::string::npos) end = all.size();
        const std::string item = all.substr(start, end - start);
        if (!out.empty()) out += end == all.size() ? " or " : ", ";
        out += code ? "`" + item + "`" : item;
        start = end + 1;
    }
    return out;
}

bool is_choice(const char* choices, const std::string& value) {
    const std::string all = choices;
    std::size_t start = 0;
    while (start <= all.size()) {
        std::size_t end = all.find('|', start);
        if (end == std::string::npos) end = all.size();
        if (all.compare(start, end - start, value) == 0) return true;
        start = end + 1;
    }
    return false;
}

// A cell of a Markdown table: a '|' would end it.
std::string cell(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '|') out += '\\';
        out += c;
    }
    return out;
}

} // namespace

const char* type_name(Type type) noexcept {
    switch (type) {
    case Type::flag:
        return "flag";
    case Type::size:
        return "size";
    case Type::duration:
        return "duration";
    case Type::choice:
        return "choice";
    case Type::text:
        return "text";
    case Type::path:
        return "path";
    }
    return "?";
}

Rows all() noexcept {
    return {kTable, kTable + kCount};
}

const Definition& definition(Variable variable) noexcept {
    return kTable[static_cast<std::size_t>(variable)];
}

const Definition* find(std::string_view name) noexcept {
    for (const Definition& d : kTable)
        if (name == d.name) return &d;
    return nullptr;
}

std::optional<std::string> raw(Variable variable) {
    return env::get(definition(variable).name);
}

bool flag(Variable variable) {
    const Definition& d = of_type(variable, Type::flag);
    const auto value = env::get(d.name);
    return value ? env::parse_flag(*value, d.name) : d.default_flag;
}

std::uint64_t size(Variable variable) {
    const Definition& d = of_type(variable, Type::size);
    const auto value = env::get(d.name);
    return value ? env::parse_size(*value, d.name) : d.default_size;
}

std::chrono::milliseconds duration(Variable variable) {
    const Definition& d = of_type(variable, Type::duration);
    const auto value = env::get(d.name);
    return value ? parse_duration(d, *value) : d.default_duration;
}

std::string text(Variable variable) {
    const Definition& d = definition(variable);
    if (d.type != Type::text && d.type != Type::path && d.type != Type::choice)
        throw Error(std::string(d.name) + " is a " + type_name(d.type) +
                    ", not text (a bug in Kiln)");
    auto value = env::get(d.name);
    if (!value) return d.default_text;
    if (d.type == Type::choice && !is_choice(d.choices, *value))
        throw ConfigError(std::string(d.name) + "='" + *value + "' is not allowed: use " +
                          choice_list(d.choices, false));
    return std::move(*value);
}

void check(Variable variable) {
    switch (definition(variable).type) {
    case Type::flag:
        flag(variable);
        break;
    case Type::size:
        size(variable);
        break;
    case Type::duration:
        duration(variable);
        break;
    case Type::choice:
    case Type::text:
    case Type::path:
        text(variable);
        break;
    }
}

std::string range_text(const Definition& d) {
    switch (d.type) {
    case Type::flag:
        return "`1` or `0` (also `true`/`false`, `yes`/`no`, `on`/`off`)";
    case Type::size:
        return "a number of bytes, or with `K`, `M`, `G` or `T` (binary), e.g. `500M`";
    case Type::duration: {
        std::string range = d.minimum.count() > 0 ? "more than `0`" : "`0` or more";
        range += ", up to `" + shown_duration(d.maximum) + "`";
        if (d.step == kSecond) range += ", in whole seconds";
        return range +
               ": a number (up to 9 digits) with `ms`, `s`, `m`, `h` or `d`; a bare "
               "number is " +
               (d.bare_unit == kSecond ? "seconds" : "milliseconds");
    }
    case Type::choice:
        return choice_list(d.choices, true);
    case Type::text:
    case Type::path:
        return d.syntax;
    }
    return "";
}

std::string default_shown(const Definition& d) {
    if (*d.when_unset) return d.when_unset;
    if (*d.default_text) return "`" + std::string(d.default_text) + "`";
    return "none";
}

std::string markdown() {
    std::string page =
        "# Environment variables\n"
        "\n"
        "<!-- Generated from the table in base/settings.cpp by `kiln help environment "
        "--markdown`; change the table, then regenerate this page. -->\n"
        "\n"
        "Every `KILN_*` variable that Kiln and the `kiln` tool read at run time. They are defined "
        "in one table, in `base/settings.cpp`: the code reads them through it, and "
        "`kiln help environment` prints it.\n"
        "\n"
        "An unset or empty variable has its default. A value that does not parse, or is out of "
        "range, is an error naming the variable (`kiln::ConfigError`); every `kiln` command "
        "checks them all before it runs. Most are read once per process, when first needed.\n"
        "\n"
        "| variable | type | default | values | meaning |\n"
        "| --- | --- | --- | --- | --- |\n";
    for (const Definition& d : kTable)
        page += "| `" + std::string(d.name) + "` | " + type_name(d.type) + " | " +
                cell(default_shown(d)) + " | " + cell(range_text(d)) + " | " + cell(d.description) +
                " |\n";
    return page;
}

} // namespace kiln::settings
