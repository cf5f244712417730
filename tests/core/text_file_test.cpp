#include "core/text_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fw {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TextFile, ReplacesTheWholeFileAndLeavesNoTemporary) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fw_text_file_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.json").string();
  ASSERT_TRUE(write_text_file(path, "first, longer text\n").ok());
  ASSERT_TRUE(write_text_file(path, "second\n").ok());
  EXPECT_EQ(read_all(path), "second\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  std::filesystem::remove_all(dir);
}

TEST(TextFile, MissingDirectoryIsAnIoErrorNamingThePath) {
  const Status st = write_text_file("/nonexistent-dir-fw/out.json", "x");
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("/nonexistent-dir-fw/out.json"), std::string::npos);
}

TEST(TextFile, WritableParentIsCheckedBeforeWriting) {
  EXPECT_TRUE(check_writable_parent("relative-name.json").ok());
  EXPECT_TRUE(check_writable_parent(std::filesystem::temp_directory_path().string() + "/x").ok());
  EXPECT_EQ(check_writable_parent("/nonexistent-dir-fw/out.json").code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace fw
