#pragma once
// The Redis backend: remote::Backend over RESP2 (redis_client.hpp), with its own pool of idle
// connections. A header of its own only so that the factory (backend.cpp) can make one; every
// other user goes through backend.hpp.

#include "kiln/cache/remote.hpp"

#include "backend.hpp"

#include <memory>

namespace kiln::cache::remote {

/// A backend for the Redis server @p config names (host, port, user, password, database, and
/// TLS with its files for rediss://). Makes no connection until its first operation.
/// @throws kiln::ConfigError for TLS files that cannot be read or used.
std::unique_ptr<Backend> make_redis_backend(const RemoteConfig& config);

} // namespace kiln::cache::remote
