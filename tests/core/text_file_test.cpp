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

TEST(TextFile, ReadsBackWhatWasWrittenAndNamesEveryFailure) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fw_text_read_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "in.json").string();
  std::string big(200000, 'x');  // more than one read buffer
  big += "\nend";
  ASSERT_TRUE(write_text_file(path, big).ok());
  Result<std::string> back = read_text_file(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, big);

  Result<std::string> d = read_text_file(dir.string());  // a directory: refused, no throw
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos);

  Result<std::string> small = read_text_file(path, 1000);  // above the limit: refused
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  Result<std::string> device = read_text_file("/dev/zero", size_t{1} << 20);  // endless
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("/dev/zero: more than 1 MiB"), std::string::npos)
      << device.status().message();

  Result<std::string> missing = read_text_file((dir / "none.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("none.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fw
