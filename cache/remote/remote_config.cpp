// RemoteConfig: the Redis URL (redis:// or rediss://) and the KILN_REMOTE_CACHE_* variables.

#include "kiln/cache/remote.hpp"

#include "kiln/env.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include "setting_file.hpp"

#include <cctype>

namespace kiln::cache {

namespace {

[[noreturn]] void bad_url(const std::string& what, std::string_view url, const std::string& why) {
    // The URL may hold a password: show only what comes after an '@'.
    std::string shown(url);
    if (const auto at = shown.rfind('@'); at != std::string::npos) {
        const std::string scheme = shown.rfind("rediss://", 0) == 0  ? "rediss://"
                                   : shown.rfind("redis://", 0) == 0 ? "redis://"
                                                                     : "";
        shown = scheme + "***@" + shown.substr(at + 1);
    }
    throw ConfigError(what + "='" + shown + "' is not a Redis URL (" + why +
                      "): use redis://[[user]:password@]host[:port][/db], or rediss:// for TLS, "
                      "e.g. redis://127.0.0.1:6379/0");
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        const int high = hex_digit(text[i + 1]), low = hex_digit(text[i + 2]);
        if (high < 0 || low < 0) return std::nullopt;
        out += static_cast<char>(high * 16 + low);
        i += 2;
    }
    return out;
}

std::string read_password_file(const std::string& path) {
    const char* name = "KILN_REMOTE_CACHE_PASSWORD_FILE";
    std::string bytes = detail::read_setting_file(name, path, "the Redis password", 4096);
    // One line: a trailing newline (as `echo` writes) is not part of the password.
    while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r'))
        bytes.pop_back();
    if (bytes.empty() || bytes.find('\n') != std::string::npos)
        throw ConfigError(std::string(name) + "='" + path +
                          "' must hold the password on one line, and nothing else");
    return bytes;
}

} // namespace

const char* to_string(RemoteMode mode) {
    switch (mode) {
    case RemoteMode::read_write:
        return "read-write";
    case RemoteMode::read_only:
        return "read-only";
    case RemoteMode::remote_only:
        return "remote-only";
    }
    return "?";
}

RemoteStats& RemoteStats::operator+=(const RemoteStats& o) {
    hits += o.hits;
    misses += o.misses;
    damaged += o.damaged;
    untrusted += o.untrusted;
    errors += o.errors;
    timeouts += o.timeouts;
    skipped += o.skipped;
    stores += o.stores;
    bytes_read += o.bytes_read;
    bytes_written += o.bytes_written;
    return *this;
}

RemoteConfig RemoteConfig::parse_url(std::string_view url, const std::string& what) {
    constexpr std::string_view kPlain = "redis://", kTls = "rediss://";
    RemoteConfig config;
    config.scheme = "redis";
    std::string_view rest;
    if (url.substr(0, kPlain.size()) == kPlain) {
        rest = url.substr(kPlain.size());
    } else if (url.substr(0, kTls.size()) == kTls) {
        rest = url.substr(kTls.size());
        config.tls = true;
    } else {
        bad_url(what, url, "it must start with redis:// or rediss://");
    }

    // The last '@' ends the credentials: a password may hold '@' only percent-encoded, but be
    // lenient and split at the last one.
    const auto at = rest.rfind('@');
    if (at != std::string_view::npos) {
        std::string_view credentials = rest.substr(0, at);
        rest = rest.substr(at + 1);
        const auto colon = credentials.find(':');
        if (colon == std::string_view::npos)
            bad_url(what, url, "the credentials must be user:password or :password");
        auto user = percent_decode(credentials.substr(0, colon));
        auto password = percent_decode(credentials.substr(colon + 1));
        if (!user || !password) bad_url(what, url, "a bad %-escape in the credentials");
        config.user = *user;
        config.password = *password;
    }
    std::string_view path;
    if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
        path = rest.substr(slash + 1);
        rest = rest.substr(0, slash);
    }
    std::string_view port;
    if (!rest.empty() && rest.front() == '[') {
        const auto close = rest.find(']');
        if (close == std::string_view::npos) bad_url(what, url, "an unclosed '[' in the host");
        config.host = std::string(rest.substr(1, close - 1));
        rest = rest.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') bad_url(what, url, "junk after the host");
            port = rest.substr(1);
            if (port.empty()) bad_url(what, url, "an empty port");
        }
    } else {
        const auto colon = rest.find(':');
        config.host = std::string(rest.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = rest.substr(colon + 1);
            if (port.empty()) bad_url(what, url, "an empty port");
        }
    }
    if (config.host.empty()) bad_url(what, url, "no host");
    for (char c : config.host)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
              c == '_'))
            bad_url(what, url, "the host holds characters a host name cannot");
    if (!port.empty()) {
        auto number = env::parse_decimal(port, 65535);
        if (!number || *number == 0) bad_url(what, url, "the port must be a number 1 to 65535");
        config.port = static_cast<std::uint16_t>(*number);
    }
    if (!path.empty()) {
        auto number = env::parse_decimal(path, 1000000);
        if (!number) bad_url(what, url, "the database must be a number, e.g. /0");
        config.db = static_cast<int>(*number);
    }
    return config;
}

std::optional<RemoteConfig> RemoteConfig::from_environment() {
    auto url = settings::raw(Variable::remote_cache);
    // Companions are checked even without a URL, so a typo never waits for the day it matters.
    const std::string mode_text = settings::text(Variable::remote_cache_mode);
    const RemoteMode mode = mode_text == "read-only"     ? RemoteMode::read_only
                            : mode_text == "remote-only" ? RemoteMode::remote_only
                                                         : RemoteMode::read_write;
    const auto ttl = settings::duration(Variable::remote_cache_ttl);
    const auto connect_timeout = settings::duration(Variable::remote_cache_connect_timeout);
    const auto op_timeout = settings::duration(Variable::remote_cache_timeout);
    const auto retry = settings::duration(Variable::remote_cache_retry);
    std::optional<std::string> password;
    if (auto file = settings::text(Variable::remote_cache_password_file); !file.empty())
        password = read_password_file(file);
    std::string ca_file = settings::text(Variable::remote_cache_ca_file);
    std::string cert_file = settings::text(Variable::remote_cache_cert_file);
    std::string key_file = settings::text(Variable::remote_cache_key_file);
    if (cert_file.empty() != key_file.empty())
        throw ConfigError(
            std::string(cert_file.empty() ? "KILN_REMOTE_CACHE_KEY_FILE"
                                          : "KILN_REMOTE_CACHE_CERT_FILE") +
            " is set without " +
            (cert_file.empty() ? "KILN_REMOTE_CACHE_CERT_FILE" : "KILN_REMOTE_CACHE_KEY_FILE") +
            ": a client certificate needs both, the certificate and its key");
    if (!url) return std::nullopt;

    RemoteConfig config = parse_url(*url, "KILN_REMOTE_CACHE");
    if (password) {
        if (!config.password.empty())
            throw ConfigError("KILN_REMOTE_CACHE holds a password and "
                              "KILN_REMOTE_CACHE_PASSWORD_FILE gives one too: keep only the file");
        config.password = *password;
    }
    // Certificates for a plain-TCP URL: the user expects TLS, which this URL would not give.
    if (!config.tls && !(ca_file.empty() && cert_file.empty()))
        throw ConfigError(std::string(ca_file.empty() ? "KILN_REMOTE_CACHE_CERT_FILE"
                                                      : "KILN_REMOTE_CACHE_CA_FILE") +
                          " is set, but KILN_REMOTE_CACHE is a redis:// URL, which is not "
                          "encrypted: use rediss:// for TLS");
    config.ca_file = std::move(ca_file);
    config.cert_file = std::move(cert_file);
    config.key_file = std::move(key_file);
    config.mode = mode;
    config.ttl = std::chrono::duration_cast<std::chrono::seconds>(ttl);
    config.connect_timeout = connect_timeout;
    config.op_timeout = op_timeout;
    config.retry_interval = retry;
    return config;
}

std::string RemoteConfig::display_url() const {
    std::string url = scheme + (tls ? "s://" : "://");
    if (!user.empty()) url += user + "@";
    url += host.find(':') != std::string::npos ? "[" + host + "]" : host;
    url += ":" + std::to_string(port) + "/" + std::to_string(db);
    return url;
}

} // namespace kiln::cache
