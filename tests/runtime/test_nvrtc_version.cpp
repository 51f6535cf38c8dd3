#include "nvrtc_version.hpp"

#include "kiln/compiler.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <regex>

TEST(NvrtcVersion, FindsTheBannerAndSkipsThePrintfTemplate) {
    using namespace std::string_literals;
    const std::string blob = "junk\0Cuda compilation tools, release %d.%d, V%s\0"s +
                             "more\0Cuda compilation tools, release 13.0, V13.0.88\0tail"s;
    EXPECT_EQ(kiln::detail::find_version_banner(blob.data(), blob.size()), "13.0.88");
}

TEST(NvrtcVersion, AbsentBannerGivesNothing) {
    const std::string blob = "no version here, release 13.0";
    EXPECT_EQ(kiln::detail::find_version_banner(blob.data(), blob.size()), "");
}

TEST(NvrtcVersion, TellsPatchReleasesApartAndAgreesWithNvrtc) {
    int major = 0, minor = 0;
    ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
    const std::string& version = kiln::nvrtc_version();
    const std::regex full(std::to_string(major) + "\\." + std::to_string(minor) + "\\.[0-9]+");
    EXPECT_TRUE(std::regex_match(version, full)) << version;
}
