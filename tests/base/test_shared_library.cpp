// Libraries opened at run time (base/shared_library.hpp): what a machine without one is told.

#include "shared_library.hpp"

#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <string>

using kiln::detail::SharedLibrary;

namespace {

std::string error_of(const SharedLibrary& library, const char* symbol) {
    try {
        library.symbol(symbol);
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(SharedLibrary, AMissingLibraryIsNamedWithBothPlacesTriedAndWhatToInstall) {
    const SharedLibrary library("libkiln-no-such-library.so.7", "/nonexistent/libkiln-x.so.7",
                                "install the kiln-x package");
    EXPECT_FALSE(library.is_open());
    const std::string why = error_of(library, "anything");
    EXPECT_NE(why.find("libkiln-no-such-library.so.7 could not be opened"), std::string::npos)
        << why;
    EXPECT_NE(why.find("/nonexistent/libkiln-x.so.7"), std::string::npos) << why;
    EXPECT_NE(why.find("install the kiln-x package"), std::string::npos) << why;
}

TEST(SharedLibrary, TheBuiltPathServesWhenTheSonameDoesNot) {
    // The C library by a name the loader does not know, then by a path that exists.
    const SharedLibrary library("libkiln-no-such-library.so.7", "libc.so.6", "install libc");
    ASSERT_TRUE(library.is_open());
    EXPECT_NE(library.symbol("strlen"), nullptr);
}

TEST(SharedLibrary, AMissingFunctionIsNamed) {
    const SharedLibrary library("libc.so.6", "/nonexistent/libc.so.6", "install libc");
    ASSERT_TRUE(library.is_open());
    const std::string why = error_of(library, "kiln_no_such_function");
    EXPECT_NE(why.find("libc.so.6 in use lacks kiln_no_such_function"), std::string::npos) << why;
}
