// Signed entries from the command line, as a team sets them up: `kiln key generate`, a CI writer
// with KILN_SIGNING_KEY_FILE, readers with KILN_TRUSTED_KEYS taking its archive, and what
// `stats` and `verify` say. Real compiles (NVRTC needs no GPU).

#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <string>

using kiln::test::run_command;
using kiln::test::TempDir;

namespace {

class SigningCli : public ::testing::Test {
  protected:
    TempDir m_dir;
    void SetUp() override {
        kiln::test::write_file(m_dir / "k.cu",
                               "extern \"C\" __global__ void scale(float* x, float a) {\n"
                               "    x[threadIdx.x] *= a;\n}\n");
    }
    // `kiln ARGS` with the cache in @p cache and the given extra environment.
    kiln::test::CommandResult kiln(const std::string& cache, const std::string& env,
                                   const std::string& args) const {
        return run_command("cd '" + m_dir.path().string() + "' && KILN_CACHE_DIR='" +
                           (m_dir / cache).string() + "' " + env + " " KILN_TOOL_PATH " " + args);
    }
};

} // namespace

TEST_F(SigningCli, KeyGenerateWritesAPrivateAndAPublicFileOnce) {
    const auto made = kiln("c", "", "key generate ci --comment ci@farm --json");
    ASSERT_EQ(made.status, 0) << made.err;
    const auto json = nlohmann::json::parse(made.out);
    EXPECT_EQ(json["public_key"], "ci.pub");
    struct stat st {};
    ASSERT_EQ(::stat((m_dir / "ci").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    const std::string line = kiln::test::read_file(m_dir / "ci.pub");
    EXPECT_EQ(line, json["line"].get<std::string>() + "\n");
    EXPECT_NE(line.find(" ci@farm"), std::string::npos);
    const auto again = kiln("c", "", "key generate ci");
    EXPECT_EQ(again.status, 1);
    EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
    EXPECT_EQ(kiln::test::read_file(m_dir / "ci.pub"), line);
}

TEST_F(SigningCli, ReadersTakeOnlyWhatTheirCiSigned) {
    ASSERT_EQ(kiln("c", "", "key generate ci --comment ci@farm").status, 0);
    kiln::test::write_file(m_dir / "trusted",
                           "# our CI\n" + kiln::test::read_file(m_dir / "ci.pub"));
    // CI compiles and exports signed; a laptop compiles and exports unsigned.
    ASSERT_EQ(kiln("ci-cache", "KILN_SIGNING_KEY_FILE=ci", "compile k.cu --arch sm_90").status, 0);
    ASSERT_EQ(kiln("ci-cache", "", "export signed.kar").status, 0);
    ASSERT_EQ(kiln("laptop", "", "compile k.cu --arch sm_90").status, 0);
    ASSERT_EQ(kiln("laptop", "", "export unsigned.kar").status, 0);

    const std::string trusting = "KILN_TRUSTED_KEYS=trusted";
    const auto refused = kiln("reader", trusting, "import unsigned.kar --json");
    ASSERT_EQ(refused.status, 0) << refused.err;
    EXPECT_EQ(nlohmann::json::parse(refused.out)["untrusted"], 1);
    EXPECT_EQ(nlohmann::json::parse(refused.out)["entries"], 0);
    const auto taken = kiln("reader", trusting, "import signed.kar --json");
    ASSERT_EQ(taken.status, 0) << taken.err;
    EXPECT_EQ(nlohmann::json::parse(taken.out)["entries"], 1);
    const auto hit = kiln("reader", trusting, "compile k.cu --arch sm_90 --json");
    ASSERT_EQ(hit.status, 0) << hit.err;
    EXPECT_EQ(nlohmann::json::parse(hit.out)["cache"], "hit") << hit.out;

    // The laptop's archive imported without trusted keys is a miss for a reader with them.
    const auto other = kiln("reader2", "", "import unsigned.kar");
    ASSERT_EQ(other.status, 0) << other.err;
    const auto miss = kiln("reader2", trusting, "compile k.cu --arch sm_90 --json");
    ASSERT_EQ(miss.status, 0) << miss.err;
    EXPECT_EQ(nlohmann::json::parse(miss.out)["cache"], "miss") << miss.out;
    EXPECT_NE(miss.err.find("not signed by a key in KILN_TRUSTED_KEYS"), std::string::npos)
        << miss.err;
    const auto stats = kiln("reader2", trusting, "cache stats --json");
    ASSERT_EQ(stats.status, 0) << stats.err;
    EXPECT_EQ(nlohmann::json::parse(stats.out)["untrusted"], 1);

    const auto verify = kiln("reader", trusting, "cache verify --json");
    ASSERT_EQ(verify.status, 0) << verify.out << verify.err;
    const auto signers = nlohmann::json::parse(verify.out)["signers"];
    ASSERT_EQ(signers.size(), 1u) << verify.out;
    EXPECT_EQ(signers.begin().key().rfind("signed by ci@farm (ed25519:", 0), 0u) << verify.out;
}

TEST_F(SigningCli, AKeysFileThatDoesNotParseStopsEveryCommand) {
    kiln::test::write_file(m_dir / "trusted", "kiln-ed25519 not-a-key\n");
    const auto result = kiln("c", "KILN_TRUSTED_KEYS=trusted", "compile k.cu --arch sm_90");
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("KILN_TRUSTED_KEYS"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("trusted:1"), std::string::npos) << result.err;
}
