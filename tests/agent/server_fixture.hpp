#pragma once
// An in-process AgentServer on a temporary Unix socket and 127.0.0.1 (any free port), with
// a token file (admin, control, read tokens) and an audit log in a temporary directory.
// Every client call is bounded by a 5 s timeout, so a broken server fails a test rather
// than hanging it.

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "agent/server.hpp"

namespace fw::agent::testing {

inline constexpr const char* kAdmin = "admin-token-0123456789";
inline constexpr const char* kControl = "control-token-0123456789";
inline constexpr const char* kRead = "read-token-0123456789";

class ServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("fw_agent_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    token_file_ = (dir_ / "tokens").string();
    std::ofstream(token_file_) << "alice admin " << kAdmin << "\nops control " << kControl
                               << "\ngrafana read " << kRead << "\n";
    std::filesystem::permissions(
        token_file_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    cfg_.unix_socket_path = (dir_ / "agent.sock").string();
    cfg_.tcp_port = 0;
    cfg_.token_file = token_file_;
    cfg_.audit_log_path = (dir_ / "audit.jsonl").string();
    cfg_.max_body_bytes = 4096;
    cfg_.max_wait_s = 5;
    cfg_.hostname = "node-7";
    cfg_.threads = 8;
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Starts the server with cfg_ (adjust cfg_ first).
  void start() {
    server_ = std::make_unique<AgentServer>(cfg_, hub_, commands_, jobs_);
    Status st = server_->start();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  httplib::Client tcp(const char* token = nullptr) {
    httplib::Client c("127.0.0.1", server_->tcp_port());
    bound(c, token);
    return c;
  }
  httplib::Client unix_client(const char* token = nullptr) {
    httplib::Client c(cfg_.unix_socket_path, 80);
    c.set_address_family(AF_UNIX);
    bound(c, token);
    return c;
  }
  static void bound(httplib::Client& c, const char* token) {
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(5, 0);
    c.set_write_timeout(5, 0);
    if (token) c.set_bearer_token_auth(token);
  }
  std::string audit_text() const {
    std::ifstream in(cfg_.audit_log_path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::filesystem::path dir_;
  std::string token_file_;
  ServerConfig cfg_;
  StateHub hub_;
  CommandQueue commands_;
  JobRegistry jobs_;
  std::unique_ptr<AgentServer> server_;
};

}  // namespace fw::agent::testing
