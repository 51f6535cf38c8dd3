#include "kiln/error.hpp"
#include "kiln/param_spec.hpp"

#include <gtest/gtest.h>

namespace {

// The caret line of a SpecError: the column of '^' relative to the spec line above it.
std::size_t caret_column(const std::string& message) {
    const std::size_t spec_line = message.find("\n  ");
    const std::size_t caret_line = message.find("\n  ", spec_line + 1);
    const std::size_t caret = message.find('^', caret_line);
    return caret - (caret_line + 3);
}

std::string spec_error(const std::string& spec) {
    try {
        kiln::parse_param_specs(spec);
    } catch (const kiln::SpecError& e) {
        return e.what();
    }
    return "no SpecError for '" + spec + "'";
}

} // namespace

TEST(ParamSpec, ParsesRawPlaceholdersAndFixedTypes) {
    auto params = kiln::parse_param_specs("T x, raw T y,float32 alpha ,  raw int64 idx");
    ASSERT_EQ(params.size(), 4u);
    EXPECT_EQ(params[0].name, "x");
    EXPECT_FALSE(params[0].raw);
    EXPECT_EQ(params[0].placeholder, "T");
    EXPECT_FALSE(params[0].dtype);
    EXPECT_TRUE(params[1].raw);
    EXPECT_EQ(params[2].dtype, kiln::DType::float32);
    EXPECT_EQ(params[2].type_text, "float32");
    EXPECT_TRUE(params[3].raw);
    EXPECT_EQ(params[3].dtype, kiln::DType::int64);
}

TEST(ParamSpec, BlankSpecHasNoParameters) {
    EXPECT_TRUE(kiln::parse_param_specs("").empty());
    EXPECT_TRUE(kiln::parse_param_specs("   ").empty());
}

TEST(ParamSpec, NumPyNamesAndAliasesAreTypes) {
    auto params = kiln::parse_param_specs("float64 a, bool b, uint8 c, complex64 d, float16 e");
    EXPECT_EQ(params[0].dtype, kiln::DType::float64);
    EXPECT_EQ(params[1].dtype, kiln::DType::bool_);
    EXPECT_EQ(params[2].dtype, kiln::DType::uint8);
    EXPECT_EQ(params[3].dtype, kiln::DType::complex64);
    EXPECT_EQ(params[4].dtype, kiln::DType::float16);
}

TEST(ParamSpec, AnUnknownTypeIsShownWithACaretUnderIt) {
    const std::string message = spec_error("T x, flaot32 y");
    EXPECT_NE(message.find("unknown type 'flaot32'"), std::string::npos) << message;
    EXPECT_EQ(caret_column(message), 5u) << message;
}

TEST(ParamSpec, AMissingNameIsShownWhereItShouldBe) {
    const std::string message = spec_error("T x, float32");
    EXPECT_NE(message.find("name is missing"), std::string::npos) << message;
    EXPECT_EQ(caret_column(message), 12u) << message;
}

TEST(ParamSpec, StrayTokensAndCharactersAreFaults) {
    EXPECT_EQ(caret_column(spec_error("T x y")), 4u);
    EXPECT_EQ(caret_column(spec_error("T x; T y")), 3u);
    EXPECT_EQ(caret_column(spec_error("T *x")), 2u);
    EXPECT_NE(spec_error("T x,, T y").find("empty parameter"), std::string::npos);
    EXPECT_NE(spec_error("raw").find("missing"), std::string::npos);
}

TEST(ParamSpec, DuplicateAndReservedNamesAreFaults) {
    EXPECT_NE(spec_error("T x, T x").find("declared twice"), std::string::npos);
    EXPECT_NE(spec_error("T i").find("reserved"), std::string::npos);
    EXPECT_NE(spec_error("T _kiln_p").find("reserved"), std::string::npos);
    EXPECT_NE(spec_error("T _ind").find("reserved"), std::string::npos);
    // Other leading underscores are legal, as in CuPy: Kiln's internals are all _kiln_ names.
    EXPECT_EQ(kiln::parse_param_specs("T _count, T _p, T _n").size(), 3u);
    EXPECT_NE(spec_error("T _raw_x").find("reserved"), std::string::npos);
}

TEST(ParamSpec, InputsAndOutputsMayNotShareNames) {
    auto in = kiln::parse_param_specs("T x");
    auto out = kiln::parse_param_specs("T x");
    EXPECT_THROW(kiln::check_unique_names(in, out, "T x", "T x"), kiln::SpecError);
}

TEST(ParamSpec, ManyTokensAndNonAsciiBytesAreFaultsWhereTheyStand) {
    // The fourth token is reported, however many follow; a stray character anywhere first.
    EXPECT_EQ(caret_column(spec_error("raw T x y z w")), 8u);
    EXPECT_EQ(caret_column(spec_error("T x y z w $")), 10u);
    // Identifiers are ASCII whatever the program's locale: a byte above 127 is a fault.
    EXPECT_EQ(caret_column(spec_error("T x\xc3\xa9")), 3u);
    EXPECT_NE(spec_error("T x, float32 x").find("declared twice"), std::string::npos);
    EXPECT_NE(spec_error("T _v12_x").find("reserved"), std::string::npos);
    EXPECT_EQ(kiln::parse_param_specs("T _v12, T _vx_y").size(), 2u);
}
