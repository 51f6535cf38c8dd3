#pragma once
// What a harness throws when Kiln broke one of its own promises (a round trip that changes the
// bytes, a generated kernel without its name): deliberately not a kiln::Error, so libFuzzer
// records it as a crash and the replay test fails on it.

#include <stdexcept>
#include <string>

namespace kiln::fuzz {

class HarnessFailure : public std::logic_error {
  public:
    using std::logic_error::logic_error;
};

/// @throws HarnessFailure saying @p what when @p ok is false.
inline void check(bool ok, const std::string& what) {
    if (!ok) throw HarnessFailure("fuzz harness: " + what);
}

} // namespace kiln::fuzz
