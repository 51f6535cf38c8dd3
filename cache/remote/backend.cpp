// The factory that picks a backend by the URL's scheme, and the names of the failure kinds. One
// line per backend here is all a new kind of server adds outside its own file.

#include "backend.hpp"

#include "kiln/error.hpp"

#include "redis_backend.hpp"

namespace kiln::cache::remote {

const char* to_string(Failure::Kind kind) {
    switch (kind) {
    case Failure::Kind::timeout:
        return "timeout";
    case Failure::Kind::unreachable:
        return "unreachable";
    case Failure::Kind::refused:
        return "refused";
    case Failure::Kind::too_large:
        return "too_large";
    case Failure::Kind::protocol:
        return "protocol";
    case Failure::Kind::full:
        return "full";
    case Failure::Kind::wrong_type:
        return "wrong_type";
    case Failure::Kind::server:
        return "server";
    }
    return "?";
}

std::unique_ptr<Backend> make_backend(const RemoteConfig& config) {
    if (config.scheme == "redis") return make_redis_backend(config);
    throw ConfigError("no remote cache speaks " + config.scheme +
                      "://: KILN_REMOTE_CACHE must be a redis:// or rediss:// URL");
}

} // namespace kiln::cache::remote
