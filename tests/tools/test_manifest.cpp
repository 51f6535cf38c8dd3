// The `kiln warm` manifest reader, in-process: front-end kernels are read into kernels that
// compile, and a wrong manifest is an ArgumentError naming the kernel and the field at fault,
// before anything compiles. Nothing here compiles.

#include "manifest.hpp"
#include "temp_dir.hpp"

#include "kiln/error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kiln::tools::read_manifest;
using nlohmann::json;

namespace {

class Manifest : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;

    std::string write(const json& kernels) {
        kiln::test::write_file(m_dir / "manifest.json", json{{"kernels", kernels}}.dump());
        return (m_dir / "manifest.json").string();
    }

    // The ArgumentError reading one kernel gives ("no error" when there is none).
    std::string error_of(const json& kernel) {
        const std::string path = write(json::array({kernel}));
        try {
            read_manifest(path);
        } catch (const kiln::ArgumentError& e) {
            return e.what();
        } catch (const std::exception& e) {
            return std::string("not an ArgumentError: ") + e.what();
        }
        return "no error";
    }
};

json scale() {
    return json::parse(R"j({
        "elementwise": {"name": "scale", "in_params": "T x, T a", "out_params": "T y",
                        "operation": "y = x * a"},
        "args": [{"dtype": "float32", "shape": [1024]}, {"dtype": "float32", "scalar": true},
                 {"dtype": "float32", "shape": [1024]}]})j");
}

json l2norm() {
    return json::parse(R"j({
        "reduction": {"name": "l2norm", "in_params": "T x", "out_params": "T y",
                      "map_expr": "x * x", "reduce_expr": "a + b",
                      "post_map_expr": "y = sqrt(a)", "identity": "0"},
        "args": [{"dtype": "float32", "shape": [4096, 4096]}], "axis": [1]})j");
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_F(Manifest, ReadsEachKindOfKernelWithALabelNamingIt) {
    const auto kernels = read_manifest(write(
        json::array({{{"source", "extern \"C\" __global__ void k() {}"}}, scale(), l2norm()})));
    ASSERT_EQ(kernels.size(), 3u);
    EXPECT_EQ(kernels[0].label, "kernel 0");
    EXPECT_EQ(kernels[1].label, "kernel 1 (elementwise 'scale')");
    EXPECT_EQ(kernels[2].label, "kernel 2 (reduction 'l2norm')");
    for (const auto& k : kernels)
        EXPECT_TRUE(k.compile) << k.label;
}

TEST_F(Manifest, AnUnknownFrontEndIsAnUnknownField) {
    json kernel = scale();
    kernel["elemwise"] = kernel["elementwise"];
    kernel.erase("elementwise");
    const std::string e = error_of(kernel);
    EXPECT_TRUE(has(e, "kernel 0: unknown field \"elemwise\"")) << e;
    EXPECT_TRUE(has(e, "\"elementwise\" or \"reduction\"")) << e;
    json both = scale();
    both["reduction"] = l2norm()["reduction"];
    EXPECT_TRUE(has(error_of(both), "kernel 0 needs exactly one of")) << error_of(both);
}

TEST_F(Manifest, ABadDtypeNamesTheKernelTheArgumentAndTheField) {
    json kernel = scale();
    kernel["args"][1]["dtype"] = "flaot32";
    const std::string e = error_of(kernel);
    EXPECT_EQ(e.rfind("kernel 0 (elementwise 'scale'): \"args\"[1]: \"dtype\": unknown dtype "
                      "'flaot32'",
                      0),
              0u)
        << e;
}

TEST_F(Manifest, AMissingFieldIsNamed) {
    json spec = l2norm();
    spec["reduction"].erase("reduce_expr");
    EXPECT_EQ(error_of(spec),
              "kernel 0 (reduction 'l2norm'): \"reduction\": \"reduce_expr\" is missing");
    json args = scale();
    args.erase("args");
    EXPECT_EQ(error_of(args), "kernel 0 (elementwise 'scale'): \"args\" is missing");
    json shape = scale();
    shape["args"][0].erase("shape");
    EXPECT_EQ(error_of(shape), "kernel 0 (elementwise 'scale'): \"args\"[0]: \"shape\" is missing");
    json dtype = scale();
    dtype["args"][2].erase("dtype");
    EXPECT_EQ(error_of(dtype), "kernel 0 (elementwise 'scale'): \"args\"[2]: \"dtype\" is missing");
}

TEST_F(Manifest, FieldsOfTheWrongTypeOrUnknownAreNamed) {
    json text = scale();
    text["elementwise"]["operation"] = 3;
    EXPECT_EQ(error_of(text),
              "kernel 0 (elementwise 'scale'): \"elementwise\": \"operation\" must be a string");
    json typo = l2norm();
    typo["reduction"]["post_map"] = "y = a";
    EXPECT_TRUE(has(error_of(typo), "kernel 0: \"reduction\": unknown field \"post_map\""))
        << error_of(typo);
    json setting = scale();
    setting["axis"] = json::array({0}); // a reduction's setting
    EXPECT_TRUE(has(error_of(setting), "kernel 0 (elementwise 'scale'): unknown field \"axis\""))
        << error_of(setting);
    json extent = scale();
    extent["args"][0]["shape"] = json::array({"1024"});
    EXPECT_EQ(error_of(extent),
              "kernel 0 (elementwise 'scale'): \"args\"[0]: \"shape\"[0] must be an integer");
    json offset = scale();
    offset["args"][0]["offset"] = 16;
    EXPECT_TRUE(has(error_of(offset), "\"args\"[0]: \"offset\" is the address modulo 16 bytes"))
        << error_of(offset);
    json scalar = scale();
    scalar["args"][1]["shape"] = json::array({4});
    EXPECT_EQ(error_of(scalar), "kernel 0 (elementwise 'scale'): \"args\"[1]: a scalar has no "
                                "\"shape\"");
    json axis = l2norm();
    axis["axis"] = "rows";
    EXPECT_TRUE(has(error_of(axis), "kernel 0 (reduction 'l2norm'): \"axis\"")) << error_of(axis);
}

TEST_F(Manifest, SpecsAndCallsTheFrontEndRefusesAreArgumentErrorsAboutTheKernel) {
    json spec = scale();
    spec["elementwise"]["in_params"] = "T x, T";
    const std::string bad_spec = error_of(spec);
    EXPECT_EQ(bad_spec.rfind("kernel 0 (elementwise 'scale'): \"elementwise\": ", 0), 0u)
        << bad_spec;
    json axis = l2norm();
    axis["axis"] = json::array({2});
    const std::string bad_axis = error_of(axis);
    EXPECT_EQ(bad_axis.rfind("kernel 0 (reduction 'l2norm'): the call its \"args\" describe is "
                             "refused: ",
                             0),
              0u)
        << bad_axis;
    EXPECT_TRUE(has(bad_axis, "axis 2 is out of bounds")) << bad_axis;
    json count = scale();
    count["args"] = json::array({count["args"][0]}); // takes 2 inputs, optionally 1 output
    EXPECT_TRUE(has(error_of(count), "the call its \"args\" describe is refused"))
        << error_of(count);
}

TEST_F(Manifest, AnErrorInALaterKernelNamesItsPosition) {
    json bad = scale();
    bad["args"][0]["dtype"] = "float33";
    try {
        read_manifest(write(json::array({scale(), l2norm(), bad})));
        FAIL() << "no error";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_TRUE(has(e.what(), "kernel 2 (elementwise 'scale'): \"args\"[0]")) << e.what();
    }
}

TEST_F(Manifest, AScalarForATextureOrSurfaceParameterIsDescribedAsOne) {
    // The value of a handle does not shape the kernel; a number would be refused by the kernel.
    const json sample = json::parse(R"j({
        "elementwise": {"name": "sample", "out_params": "float32 y",
                        "in_params": "cudaTextureObject_t t, cudaSurfaceObject_t s, float32 x",
                        "operation": "y = tex1D<float>(t, x); surf1Dwrite(y, s, int(i) * 4)"},
        "args": [{"dtype": "uint64", "scalar": true}, {"dtype": "uint64", "scalar": true},
                 {"dtype": "float32", "shape": [64]}]})j");
    EXPECT_EQ(error_of(sample), "no error");
}
