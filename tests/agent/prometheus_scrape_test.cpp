// A real Prometheus (Debian package `prometheus`) on 127.0.0.1 scrapes the agent with a
// read token and answers a query with the agent's series: the exposition, the labels and
// the bearer-token path work end to end. Without Prometheus (FLEXWATT_PROMETHEUS, else
// /usr/bin/prometheus) it skips, or fails under CI=true (require_tool.hpp).
// Bounded: Prometheus gets 60 s to start and scrape, then the test fails.

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "server_fixture.hpp"
#include "test_state.hpp"

extern char** environ;

namespace fw::agent {
namespace {

using nlohmann::json;

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

class PrometheusScrape : public testing::ServerFixture {
 protected:
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    ServerFixture::TearDown();
  }
  pid_t pid_ = -1;
};

TEST_F(PrometheusScrape, QueriesTheAgentsSeriesBack) {
  const std::string prometheus =
      testing_tools::tool_path("FLEXWATT_PROMETHEUS", "/usr/bin/prometheus");
  FW_REQUIRE_TOOL(!prometheus.empty(), "prometheus (or set FLEXWATT_PROMETHEUS)");
  hub_.publish(testing::sample_state());
  start();
  std::ofstream(dir_ / "scrape.token") << testing::kRead;
  std::ofstream(dir_ / "prometheus.yml") << "global: {scrape_interval: 1s}\n"
                                            "scrape_configs:\n"
                                            "  - job_name: flexwatt\n"
                                            "    authorization: {credentials_file: "
                                         << (dir_ / "scrape.token").string()
                                         << "}\n"
                                            "    static_configs: [{targets: ['127.0.0.1:"
                                         << server_->tcp_port() << "']}]\n";
  int port = free_loopback_port();
  ASSERT_GT(port, 0);
  std::vector<std::string> args = {
      prometheus, "--config.file=" + (dir_ / "prometheus.yml").string(),
      "--storage.tsdb.path=" + (dir_ / "data").string(),
      "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=error"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ASSERT_EQ(::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ), 0);

  httplib::Client prom("127.0.0.1", port);
  prom.set_connection_timeout(1, 0);
  prom.set_read_timeout(5, 0);
  json series;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = prom.Get("/api/v1/query?query=flexwatt_gpu_power_watts%7Bgpu%3D%221%22%7D");
    if (r && r->status == 200) {
      auto j = json::parse(r->body, nullptr, false);
      if (!j.is_discarded() && !j["data"]["result"].empty()) {
        series = j["data"]["result"][0];
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_FALSE(series.is_null()) << "Prometheus did not return the agent's series in 60 s";
  EXPECT_EQ(series["value"][1], "310");
  EXPECT_EQ(series["metric"]["UUID"], "GPU-00000001");
  EXPECT_EQ(series["metric"]["hostname"], "node-7");
  EXPECT_EQ(series["metric"]["job"], "flexwatt");  // Prometheus's own label, not the agent's
}

}  // namespace
}  // namespace fw::agent
