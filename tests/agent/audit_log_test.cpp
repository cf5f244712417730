#include "agent/audit_log.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace fw::agent {
namespace {

using nlohmann::json;

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fw_audit_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "audit.jsonl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static AuditRecord record(double t, int status, std::string body = "{}") {
    AuditRecord r;
    r.time_unix_s = t;
    r.who = status == 401 ? "unauthenticated" : "ops";
    r.remote = "127.0.0.1:5000";
    r.method = "PUT";
    r.path = "/v1/budget";
    r.body = std::move(body);
    r.status = status;
    return r;
  }
  std::vector<json> lines(const std::string& path) const {
    std::vector<json> out;
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);) out.push_back(json::parse(l));
    return out;
  }
  std::filesystem::path dir_;
  std::string path_;
};

// Defect: refused writes were logged without bound (34 MB/min under abuse). Refusals now pass a
// token bucket; the ones dropped are counted in one "suppressed" line.
TEST_F(AuditLogTest, RefusalsAreRateLimitedAndCounted) {
  AuditLog log;
  AuditLimits lim;
  lim.rate_per_s = 10;
  lim.burst = 5;
  ASSERT_TRUE(log.open(path_, lim).ok());
  const double t = 1.8e9;
  for (int i = 0; i < 20; ++i) log.write(record(t, 401));
  log.write(record(t, 202));  // accepted writes are always logged
  log.write(record(t + 2, 401));
  auto l = lines(path_);
  ASSERT_EQ(l.size(), 5u + 1u + 1u + 1u) << l.size();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(l[i]["status"], 401);
  EXPECT_EQ(l[5]["status"], 202);
  EXPECT_EQ(l[6]["event"], "suppressed");
  EXPECT_EQ(l[6]["records"], 15);
  EXPECT_EQ(l[7]["status"], 401);
  // A count still open is written by flush_suppressed (the server calls it each second).
  for (int i = 0; i < 30; ++i) log.write(record(t + 2, 403));
  log.flush_suppressed(t + 3);
  l = lines(path_);
  ASSERT_EQ(l.back()["event"], "suppressed");
  EXPECT_GT(l.back()["records"].get<int>(), 0);
}

// Defect: the log had no size bound. It now rotates: PATH.1 … PATH.keep, each file 0600.
TEST_F(AuditLogTest, RotatesAtTheSizeLimitAndKeepsAFewFiles) {
  AuditLog log;
  AuditLimits lim;
  lim.max_bytes = 2000;
  lim.keep = 2;
  ASSERT_TRUE(log.open(path_, lim).ok());
  for (int i = 0; i < 100; ++i)
    log.write(record(1.8e9 + i, 202, "{\"n\": " + std::to_string(i) + "}"));
  EXPECT_TRUE(std::filesystem::exists(path_ + ".1"));
  EXPECT_TRUE(std::filesystem::exists(path_ + ".2"));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".3"));
  for (const std::string& p : {path_, path_ + ".1", path_ + ".2"}) {
    EXPECT_LE(std::filesystem::file_size(p), 2000u) << p;
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << p;
  }
  auto newest = lines(path_);
  ASSERT_FALSE(newest.empty());
  EXPECT_EQ(newest.back()["body"], "{\"n\": 99}");
  auto older = lines(path_ + ".1");
  ASSERT_FALSE(older.empty());
  EXPECT_EQ(json::parse(older.back()["body"].get<std::string>())["n"].get<int>() + 1,
            json::parse(newest.front()["body"].get<std::string>())["n"].get<int>());
}

}  // namespace
}  // namespace fw::agent
