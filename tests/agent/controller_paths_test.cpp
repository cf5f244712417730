// The files a controller spec names on the agent (ppo:PATH, capnet:PATH, over PUT
// /v1/controller or in agent.yaml) are confined to the configured policy_dirs: a traversal or
// a symlink out of them is refused without opening the file, a FIFO is refused at once
// instead of blocking an HTTP worker, an answer never quotes the bytes of the file, and a
// policy inside the directories is accepted and runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/node_agent.hpp"
#include "step_clock.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::agent {
namespace {

namespace fs = std::filesystem;

using testing::StepClock;

// The first bytes of a file outside the policy directories: an unterminated JSON string, which
// a JSON parser's message would quote ("last read: ...").
constexpr const char* kSecret = "\"ZQXJ-s3cret-bytes-of-a-private-file\n";

class ControllerPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fw_controller_paths_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    policies_ = dir_ + "/policies";
    fs::create_directories(policies_);
    fs::copy_file(std::string(FLEXWATT_SOURCE_DIR) + "/policies/grpo-7b-a100.json",
                  policies_ + "/grpo-7b-a100.json");
    std::ofstream(dir_ + "/secret.txt") << kSecret;
    fs::create_symlink(dir_ + "/secret.txt", policies_ + "/escape.json");
    fifo_ = policies_ + "/fifo.json";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    cfg_.plant.backend = std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
    cfg_.period_s = 0.1;
    cfg_.budget_w = 260;
    cfg_.restore_file = dir_ + "/saved.json";
    cfg_.lock_file = dir_ + "/agent.lock";
    cfg_.server.unix_socket_path = dir_ + "/agent.sock";
    cfg_.server.tcp_port = 0;  // any free port; no token file: every caller is admin
    cfg_.server.threads = 4;
    cfg_.policy_dirs = {policies_};
  }
  void TearDown() override {
    release_fifo();
    fs::remove_all(dir_);
  }
  // A reader blocked in open() of the FIFO (the defect) is released by opening its write end,
  // so that a failing test can still stop the agent (which joins its HTTP workers).
  void release_fifo() {
    const int fd = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  // PUT /v1/controller with `spec`; the client gives up after 3 s.
  httplib::Result put(NodeAgent& a, const std::string& spec) {
    httplib::Client c("127.0.0.1", a.tcp_port());
    c.set_connection_timeout(3, 0);
    c.set_read_timeout(3, 0);
    c.set_write_timeout(3, 0);
    return c.Put("/v1/controller", nlohmann::json{{"controller", spec}}.dump(), "application/json");
  }

  std::string dir_, policies_, fifo_;
  AgentConfig cfg_;
};

TEST_F(ControllerPathsTest, TraversalOutOfThePolicyDirIsRefusedWithoutTheFileBytes) {
  NodeAgent a(cfg_);
  ASSERT_TRUE(a.start().ok());
  auto r = put(a, "ppo:" + policies_ + "/../secret.txt");
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(r->body.find("ZQXJ"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("policy_dirs"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("secret.txt"), std::string::npos) << r->body;  // names the path
  auto rel = put(a, "capnet:../../../../../../../../etc/shadow");
  ASSERT_TRUE(rel) << "no answer";
  EXPECT_EQ(rel->status, 422) << rel->body;
  EXPECT_NE(rel->body.find("policy_dirs"), std::string::npos) << rel->body;
}

TEST_F(ControllerPathsTest, SymlinkEscapingThePolicyDirIsRefused) {
  NodeAgent a(cfg_);
  ASSERT_TRUE(a.start().ok());
  auto r = put(a, "ppo:" + policies_ + "/escape.json");
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(r->body.find("ZQXJ"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("policy_dirs"), std::string::npos) << r->body;
}

TEST_F(ControllerPathsTest, FifoIsAnsweredPromptly) {
  NodeAgent a(cfg_);
  ASSERT_TRUE(a.start().ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = put(a, "ppo:" + fifo_);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r) release_fifo();
  ASSERT_TRUE(r) << "no answer within 3 s (a worker blocked opening the FIFO)";
  EXPECT_LT(took_s, 2.0);
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_NE(r->body.find("regular file"), std::string::npos) << r->body;
}

TEST_F(ControllerPathsTest, ConfiguredControllerOutsideThePolicyDirsIsRefusedAtStart) {
  cfg_.controller = "ppo:" + policies_ + "/escape.json";
  NodeAgent a(cfg_);
  const Status s = a.start();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("ZQXJ"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("policy_dirs"), std::string::npos) << s.message();
}

TEST_F(ControllerPathsTest, PolicyInsideThePolicyDirIsAcceptedAndRuns) {
  cfg_.duration_s = 0.5;
  NodeAgent a(cfg_);
  ASSERT_TRUE(a.start().ok());
  const std::string spec = "ppo:" + policies_ + "/grpo-7b-a100.json";
  auto r = put(a, spec);
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, 202) << r->body;
  StepClock clock;
  a.run(clock, {});
  auto p = a.hub().latest();
  EXPECT_EQ(p->state.controller, spec);
  ASSERT_TRUE(a.shutdown().ok());
}

}  // namespace
}  // namespace fw::agent
