// Stress: the node agent on the fake NVML library (4 GPUs, 350 W found at start) under ordinary
// job traffic — 4 clients looping register -> progress -> knobs -> delete over loopback TCP for a
// bounded time — while its loop runs a cap controller at 50 Hz on the wall clock. Run under
// ASan/UBSan and TSan in CI (`make sanitize`): before the limiter was re-sized with the job set,
// this traffic corrupted the heap within seconds. Bounded: 4 clients x 3 s, 127.0.0.1 only.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/node_agent.hpp"
#include "runtime/clock.hpp"

namespace fw::agent {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class JobTrafficStress : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fw_stress_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    std::ofstream(dir_ + "/script.txt")
        << "gpus 4\npower * 300\nlimits * min=100 max=400 default=400 enforced=350 limit=350\n";
    ::setenv("FAKE_NVML_SCRIPT", (dir_ + "/script.txt").c_str(), 1);
    ::setenv("FAKE_NVML_STATE", (dir_ + "/state.txt").c_str(), 1);
    cfg_.plant.backend = "fake-nvml";
    cfg_.plant.nvml_library = FAKE_NVML_LIBRARY;
    cfg_.controller = "static:knob=cap,value=250";
    cfg_.period_s = 0.02;
    cfg_.budget_w = 1400;
    cfg_.restore_file = dir_ + "/saved.json";
    cfg_.lock_file = dir_ + "/agent.lock";
    cfg_.server.unix_socket_path = dir_ + "/agent.sock";
    cfg_.server.tcp_port = 0;
    cfg_.server.threads = 8;
  }
  void TearDown() override {
    ::unsetenv("FAKE_NVML_SCRIPT");
    ::unsetenv("FAKE_NVML_STATE");
    fs::remove_all(dir_);
  }
  std::string dir_;
  AgentConfig cfg_;
};

TEST_F(JobTrafficStress, RegisterProgressDeleteWhileTheLoopRunsThenRestores) {
  NodeAgent agent(cfg_);
  Status st = agent.start();
  ASSERT_TRUE(st.ok()) << st.message();
  const int port = agent.tcp_port();
  std::atomic<bool> stop{false};
  SteadyClock clock;
  AgentRunSummary sum;
  std::thread loop([&] { sum = agent.run(clock, [&] { return stop.load(); }); });

  constexpr int kClients = 4;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::atomic<int> registered{0}, failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client http("127.0.0.1", port);
      http.set_connection_timeout(2);
      http.set_read_timeout(2);
      for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
        const std::string id = "c" + std::to_string(c) + "-" + std::to_string(i);
        const std::string body = R"({"id":")" + id + R"(","gpus":[)" + std::to_string(c % 4) +
                                 R"(],"knobs":{"gen_concurrency":{"min":8,"max":64,"step":8}}})";
        auto r = http.Post("/v1/jobs", body, "application/json");
        if (!r || r->status != 201) {
          ++failed;
          continue;
        }
        ++registered;
        auto p = http.Post("/v1/jobs/" + id + "/progress", R"({"tokens_total":1,"steps_total":1})",
                           "application/json");
        if (!p || p->status != 200) ++failed;
        auto k = http.Get("/v1/jobs/" + id + "/knobs");
        if (!k || k->status != 200) ++failed;
        auto d = http.Delete("/v1/jobs/" + id);
        if (!d || d->status != 200) ++failed;
      }
    });
  }
  for (auto& t : clients) t.join();
  stop = true;
  loop.join();
  EXPECT_GT(registered.load(), 10);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GT(sum.ticks, 20);
  EXPECT_TRUE(agent.shutdown().ok());
  EXPECT_EQ(read_all(dir_ + "/state.txt"), "0 350\n1 350\n2 350\n3 350\n");  // restored
  EXPECT_FALSE(fs::exists(cfg_.restore_file));
}

}  // namespace
}  // namespace fw::agent
