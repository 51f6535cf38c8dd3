#include "kiln/error.hpp"

#include <gtest/gtest.h>

TEST(NumberLines, NumbersEachLineRightAligned) {
    std::string source;
    for (int i = 1; i <= 10; ++i)
        source += "line" + std::to_string(i) + "\n";
    const std::string numbered = kiln::number_lines(source);
    EXPECT_NE(numbered.find(" 1 | line1\n"), std::string::npos);
    EXPECT_NE(numbered.find("10 | line10\n"), std::string::npos);
    EXPECT_EQ(numbered.find("11 |"), std::string::npos) << "no phantom line after the last newline";
}

TEST(NumberLines, KeepsALastLineWithoutNewline) {
    EXPECT_EQ(kiln::number_lines("a\nb"), "1 | a\n2 | b\n");
}

TEST(CompileError, CarriesLogOptionsAndNumberedSource) {
    kiln::CompileError e("NVRTC could not compile k.cu", "k.cu(2): error: bad", {"-arch=sm_90"},
                         "int x;\nbad\n");
    EXPECT_EQ(e.log(), "k.cu(2): error: bad");
    ASSERT_EQ(e.options().size(), 1u);
    EXPECT_EQ(e.numbered_source(), "1 | int x;\n2 | bad\n");
    const std::string what = e.what();
    EXPECT_NE(what.find("2 | bad"), std::string::npos);
    EXPECT_NE(what.find("k.cu(2): error: bad"), std::string::npos);
    EXPECT_NE(what.find("-arch=sm_90"), std::string::npos);
}

TEST(CompileError, FindsNvrtcsFirstErrorInTheLog) {
    const std::string log = "k.cu(2): warning #177-D: variable \"v\" was declared but never "
                            "referenced\n"
                            "    puts(\"k.cu(1): error: a quoted line, not an error\");\n"
                            "k.cu(7): error: expected a \";\"\n"
                            "    x = 1\n"
                            "         ^\n\n"
                            "k.cu(9): error: identifier \"y\" is undefined\n\n"
                            "2 errors detected in the compilation of \"k.cu\".\n";
    EXPECT_EQ(kiln::first_compile_error(log), "k.cu(7): error: expected a \";\"");
    EXPECT_EQ(kiln::CompileError("summary", log, {}, "").first_error(),
              "k.cu(7): error: expected a \";\"");
    EXPECT_EQ(kiln::first_compile_error("a.cu(1): catastrophic error: cannot open source file "
                                        "\"x.h\"\n  #include \"x.h\"\n"),
              "a.cu(1): catastrophic error: cannot open source file \"x.h\"");
    EXPECT_EQ(kiln::first_compile_error("nvrtc: error: unrecognized option --bogus found\n"),
              "nvrtc: error: unrecognized option --bogus found");
    EXPECT_EQ(kiln::first_compile_error("k.cu(2): warning #177-D: unused\n"), "");
    EXPECT_EQ(kiln::first_compile_error(""), "");
}

TEST(CudaError, NamesTheCallTheCodeAndTheLocation) {
    kiln::CudaError e("cuLaunchKernel(f, ...)", 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                      "too many resources requested for launch", "launch.cpp", 42);
    const std::string what = e.what();
    EXPECT_NE(what.find("cuLaunchKernel(f, ...)"), std::string::npos);
    EXPECT_NE(what.find("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)"), std::string::npos);
    EXPECT_NE(what.find("launch.cpp:42"), std::string::npos);
    EXPECT_EQ(e.code(), 701);
}

TEST(ErrorHierarchy, EveryKilnErrorIsAKilnError) {
    EXPECT_THROW(throw kiln::NoDeviceError("x"), kiln::Error);
    EXPECT_THROW(throw kiln::ArgumentError("x"), kiln::Error);
    EXPECT_THROW(throw kiln::ConfigError("x"), kiln::Error);
    EXPECT_THROW(throw kiln::SpecError("x"), kiln::Error);
    EXPECT_THROW(throw kiln::ShapeError("x"), kiln::Error);
}
