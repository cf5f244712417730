#include "core/confined_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

namespace fw {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSecret = "ZQXJ-private-bytes";

class ConfinedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fw_confined_XXXXXX";
    root_ = ::mkdtemp(tmpl);
    dir_ = root_ + "/policies";
    fs::create_directories(dir_ + "/sub");
    std::ofstream(dir_ + "/good.json") << "{\"ok\": true}";
    std::ofstream(dir_ + "/sub/deep.json") << "deep";
    std::ofstream(root_ + "/secret.txt") << kSecret;
    fs::create_directories(root_ + "/policies-evil");  // shares the prefix "policies"
    std::ofstream(root_ + "/policies-evil/x.json") << kSecret;
  }
  void TearDown() override { fs::remove_all(root_); }
  Result<std::string> read(const std::string& path, size_t max = kMaxTextFileBytes) {
    return read_confined_file(path, {dir_}, "policy_dirs", max);
  }
  static void expect_refused(const Result<std::string>& r, const std::string& word) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().find("ZQXJ"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(word), std::string::npos) << r.status().message();
  }

  std::string root_, dir_;
};

TEST_F(ConfinedFileTest, ReadsARegularFileInsideTheDirectories) {
  auto r = read(dir_ + "/good.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "{\"ok\": true}");
  auto deep = read(dir_ + "/sub/../sub/deep.json");  // `..` that stays inside is fine
  ASSERT_TRUE(deep.ok()) << deep.status().message();
  EXPECT_EQ(*deep, "deep");
  auto slash = read_confined_file(dir_ + "/good.json", {dir_ + "/"}, "policy_dirs");
  EXPECT_TRUE(slash.ok()) << slash.status().message();
}

TEST_F(ConfinedFileTest, TraversalAndPrefixSiblingsAreOutside) {
  for (const std::string& p :
       {dir_ + "/../secret.txt", dir_ + "/sub/../../secret.txt", root_ + "/policies-evil/x.json",
        root_ + "/secret.txt", std::string("/etc/passwd"), dir_}) {
    auto r = read(p);
    expect_refused(r, "outside policy_dirs");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
  }
  // An outside path that does not exist gets the same answer: no existence oracle.
  auto missing = read(dir_ + "/../no-such-file");
  expect_refused(missing, "outside policy_dirs");
}

TEST_F(ConfinedFileTest, RelativePathsResolveAgainstTheWorkingDirectory) {
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  auto in = read("good.json");
  auto out = read("../secret.txt");
  fs::current_path(cwd);
  EXPECT_TRUE(in.ok()) << in.status().message();
  expect_refused(out, "outside");
}

TEST_F(ConfinedFileTest, SymlinksOutOfTheDirectoriesAreRefused) {
  fs::create_symlink(root_ + "/secret.txt", dir_ + "/file-link.json");
  fs::create_directory_symlink(root_, dir_ + "/dir-link");
  fs::create_symlink("good.json", dir_ + "/inside-link.json");
  expect_refused(read(dir_ + "/file-link.json"), "outside");
  expect_refused(read(dir_ + "/dir-link/secret.txt"), "outside");
  expect_refused(read(dir_ + "/dir-link/missing"), "outside");
  auto inside = read(dir_ + "/inside-link.json");  // a link that stays inside is followed
  EXPECT_TRUE(inside.ok()) << inside.status().message();
}

TEST_F(ConfinedFileTest, ADirectoryThatIsASymlinkIsAllowedUnderBothNames) {
  fs::create_directory_symlink(dir_, root_ + "/alias");
  auto via_alias = read_confined_file(root_ + "/alias/good.json", {root_ + "/alias"}, "p");
  auto via_real = read_confined_file(dir_ + "/good.json", {root_ + "/alias"}, "p");
  EXPECT_TRUE(via_alias.ok()) << via_alias.status().message();
  EXPECT_TRUE(via_real.ok()) << via_real.status().message();
}

TEST_F(ConfinedFileTest, FifoIsRefusedAtOnceInsteadOfBlocking) {
  const std::string fifo = dir_ + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto fut = std::async(std::launch::async, [&] { return read(fifo); });
  const bool done = fut.wait_for(std::chrono::seconds(3)) == std::future_status::ready;
  if (!done) {  // release the blocked open() so the test fails instead of hanging
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  ASSERT_TRUE(done) << "read_confined_file blocked on a FIFO";
  auto r = fut.get();
  expect_refused(r, "not a regular file");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ConfinedFileTest, DevicesAndDirectoriesAreNotRead) {
  expect_refused(read_confined_file("/dev/zero", {"/dev"}, "policy_dirs"), "not a regular file");
  expect_refused(read(dir_ + "/sub"), "not a regular file");
}

TEST_F(ConfinedFileTest, MissingTooBigAndNoDirectories) {
  auto missing = read(dir_ + "/none.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto big = read(dir_ + "/good.json", 4);
  expect_refused(big, "more than 4 bytes");
  auto none = read_confined_file(dir_ + "/good.json", {}, "policy_dirs");
  expect_refused(none, "outside policy_dirs (none set)");
  expect_refused(read(""), "empty");
}

}  // namespace
}  // namespace fw
