// RawModule::from_file refuses what is not a module at construction, without a GPU.

#include "temp_dir.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

TEST(RawModuleFile, AMissingFileIsAnArgumentError) {
    EXPECT_THROW(kiln::RawModule::from_file("/nonexistent/k.cubin"), kiln::ArgumentError);
}

TEST(RawModuleFile, AFileThatIsNotAModuleIsAnArgumentError) {
    kiln::test::TempDir dir;
    kiln::test::write_file(dir / "notes.cubin", "these are not the kernels you are looking for");
    try {
        kiln::RawModule::from_file((dir / "notes.cubin").string());
        FAIL() << "accepted a text file as a module";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("not a cubin, fatbin or PTX"), std::string::npos);
    }
}
