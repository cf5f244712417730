#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "server_fixture.hpp"
#include "test_state.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;
using testing::kAdmin;
using testing::kControl;
using testing::kRead;

class Server : public testing::ServerFixture {};

TEST_F(Server, DiscoverAndHealthNeedNoToken) {
  hub_.publish(testing::sample_state());
  start();
  auto c = tcp();
  auto r = c.Get("/v1/discover");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto j = json::parse(r->body);
  EXPECT_EQ(j["auth_required"], true);
  EXPECT_EQ(j["hostname"], "node-7");
  EXPECT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][1]["uuid"], "GPU-00000001");
  EXPECT_FALSE(j["endpoints"].empty());
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST_F(Server, StatusNeedsAReadToken) {
  hub_.publish(testing::sample_state());
  start();
  auto none = tcp().Get("/v1/status");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"flexwatt\"");
  EXPECT_EQ(json::parse(none->body)["status"], 401);
  auto wrong = tcp("not-a-real-token-at-all").Get("/v1/status");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto ok = tcp(kRead).Get("/v1/status");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->get_header_value("Content-Type"), "application/json");
  auto j = json::parse(ok->body);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["gpus"][0]["cap_w"], 500);
  EXPECT_EQ(j["jobs"][0]["id"], "grpo-1");
  EXPECT_EQ(ok->get_header_value("X-Flexwatt-Config-Version"), "0");
}

TEST_F(Server, ScopesGateWrites) {
  start();
  const std::string budget = R"({"watts": 600})";
  auto read = tcp(kRead).Put("/v1/budget", budget, "application/json");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 403);
  auto control = tcp(kControl).Put("/v1/budget", budget, "application/json");
  ASSERT_TRUE(control);
  EXPECT_EQ(control->status, 202) << control->body;
  auto ctl = tcp(kControl).Put("/v1/controller", R"({"controller": "static"})", "application/json");
  ASSERT_TRUE(ctl);
  EXPECT_EQ(ctl->status, 403);
  auto admin = tcp(kAdmin).Put("/v1/controller", R"({"controller": "static"})", "application/json");
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->status, 202);
  auto cmds = commands_.drain();
  ASSERT_EQ(cmds.size(), 2u);  // only the two allowed writes reached the loop
  EXPECT_EQ(cmds[0].who, "ops");
  ASSERT_TRUE(std::holds_alternative<BudgetChange>(cmds[0].what));
  EXPECT_EQ(std::get<BudgetChange>(cmds[0].what).budget.watts, 600);
  EXPECT_EQ(cmds[1].who, "alice");
  EXPECT_EQ(std::get<ControllerChange>(cmds[1].what).spec, "static");
}

TEST_F(Server, JobPfiIsSetWithAControlToken) {
  start();
  ASSERT_EQ(jobs_.add("moe", {}), JobRegistry::Outcome::kOk);
  const std::string body = R"({"pfi": 1.43})";
  auto read = tcp(kRead).Put("/v1/jobs/moe/pfi", body, "application/json");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 403);
  EXPECT_TRUE(std::isnan(jobs_.get("moe")->pfi));
  auto bad = tcp(kControl).Put("/v1/jobs/moe/pfi", R"({"pfi": 0})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  auto unknown = tcp(kControl).Put("/v1/jobs/nope/pfi", body, "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  auto ok = tcp(kControl).Put("/v1/jobs/moe/pfi", body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_DOUBLE_EQ(jobs_.get("moe")->pfi, 1.43);
  EXPECT_EQ(jobs_.get("moe")->pfi_source, "sweep");
  // A PFI given at registration is kept with its source.
  auto reg = tcp(kControl).Post("/v1/jobs", R"({"id": "dense", "pfi": 1.27})", "application/json");
  ASSERT_TRUE(reg);
  EXPECT_EQ(reg->status, 201) << reg->body;
  EXPECT_EQ(jobs_.get("dense")->pfi_source, "registration");
}

TEST_F(Server, BadBodiesChangeNothing) {
  start();
  auto c = tcp(kAdmin);
  auto malformed = c.Put("/v1/budget", "{\"watts\": ", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(json::parse(malformed->body)["error"], "body is not valid JSON");
  auto invalid = c.Put("/v1/budget", R"({"watts": -5})", "application/json");
  ASSERT_TRUE(invalid);
  EXPECT_EQ(invalid->status, 422);
  auto oversized = c.Put("/v1/budget", std::string(10000, ' ') + "{}", "application/json");
  ASSERT_TRUE(oversized);
  EXPECT_EQ(oversized->status, 413);
  EXPECT_NE(json::parse(oversized->body)["error"].get<std::string>().find("4096"),
            std::string::npos);
  auto spec = c.Put("/v1/controller", R"({"controller": "pid:kp="})", "application/json");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->status, 422) << spec->body;
  // Issue 44 N5: a key given twice, a fractional knob ladder.
  auto twice = c.Put("/v1/budget", R"({"watts": 600, "watts": 1})", "application/json");
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 400) << twice->body;
  EXPECT_EQ(json::parse(twice->body)["error"],
            "watts: duplicate key (a key may appear once in an object)");
  auto ladder = c.Post("/v1/jobs",
                       R"({"id": "frac", "knobs": {"gen_concurrency": {"min": 8.5, "max": 9.9,
                           "step": 0.7}}})",
                       "application/json");
  ASSERT_TRUE(ladder);
  EXPECT_EQ(ladder->status, 422) << ladder->body;
  EXPECT_FALSE(jobs_.get("frac"));
  EXPECT_EQ(commands_.pending(), 0u);
  EXPECT_EQ(commands_.version(), 0u);
  auto missing = c.Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["status"], 404);
}

TEST_F(Server, StaleExpectedVersionIs409) {
  start();
  auto c = tcp(kControl);
  auto first = c.Put("/v1/budget", R"({"watts": 600, "expected_version": 0})", "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 202);
  EXPECT_EQ(json::parse(first->body)["config_version"], 1);
  auto stale = c.Put("/v1/budget", R"({"watts": 500, "expected_version": 0})", "application/json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(commands_.version(), 1u);
}

TEST_F(Server, ControllerValidatorDecides) {
  cfg_.token_file.clear();
  server_ = std::make_unique<AgentServer>(cfg_, hub_, commands_, jobs_);
  server_->set_controller_validator([](const std::string& spec) {
    return spec.rfind("pid", 0) == 0 ? Status::Ok() : Status::NotFound("unknown controller");
  });
  ASSERT_TRUE(server_->start().ok());
  auto bad = tcp().Put("/v1/controller", R"({"controller": "magic"})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  EXPECT_EQ(json::parse(bad->body)["error"], "controller: unknown controller");
  auto good = tcp().Put("/v1/controller", R"({"controller": "pid:kp=1"})", "application/json");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 202);
}

TEST_F(Server, AuditLogRecordsEveryWrite) {
  start();
  tcp(kControl).Put("/v1/budget", R"({"watts": 600})", "application/json");
  tcp(kRead).Put("/v1/budget", R"({"watts": 1})", "application/json");
  tcp().Put("/v1/budget", R"({"watts": 2})", "application/json");
  tcp(kControl).Put("/v1/budget", std::string(5000, 'x'), "application/json");
  tcp(kRead).Get("/v1/status");  // reads are not audited
  server_->stop();
  std::vector<json> lines;
  std::istringstream in(audit_text());
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 4u) << audit_text();
  EXPECT_EQ(lines[0]["who"], "ops");
  EXPECT_EQ(lines[0]["method"], "PUT");
  EXPECT_EQ(lines[0]["path"], "/v1/budget");
  EXPECT_EQ(lines[0]["status"], 202);
  EXPECT_EQ(lines[0]["body"], R"({"watts": 600})");
  EXPECT_EQ(lines[1]["who"], "grafana");
  EXPECT_EQ(lines[1]["status"], 403);
  EXPECT_EQ(lines[2]["who"], "unauthenticated");
  EXPECT_EQ(lines[2]["status"], 401);
  EXPECT_EQ(lines[3]["status"], 413);
  EXPECT_EQ(lines[0]["time"].get<std::string>().back(), 'Z');
  struct stat st {};
  ASSERT_EQ(::stat(cfg_.audit_log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(Server, UnixSocketHasTheConfiguredMode) {
  cfg_.unix_socket_mode = 0600;
  start();
  struct stat st {};
  ASSERT_EQ(::stat(cfg_.unix_socket_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto r = unix_client(kRead).Get("/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto w = unix_client(kControl).Put("/v1/budget", R"({"watts": 600})", "application/json");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->status, 202);
  server_->stop();
  EXPECT_FALSE(std::filesystem::exists(cfg_.unix_socket_path));  // removed on stop
}

// Issue 44 N5: a start that fails after binding the Unix socket (here: the TCP port is taken)
// must not leave the socket file behind, bound and listening with nobody serving it: it was
// there until stop() or the destructor, and a client connecting meanwhile hung in the backlog.
TEST_F(Server, AFailedStartLeavesNoSocketFile) {
  int taken = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(taken, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(taken, reinterpret_cast<sockaddr*>(&a), &len), 0);
  cfg_.tcp_port = ntohs(a.sin_port);
  auto open_fds = [] {
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd");
         it != std::filesystem::directory_iterator(); ++it) {
      ++n;
    }
    return n;
  };
  const size_t fds_before = open_fds();
  {
    AgentServer s(cfg_, hub_, commands_, jobs_);
    Status st = s.start();
    EXPECT_EQ(st.code(), StatusCode::kIoError) << st.message();
    EXPECT_FALSE(std::filesystem::exists(cfg_.unix_socket_path))
        << "the failed start left " << cfg_.unix_socket_path;
    s.stop();
    EXPECT_FALSE(std::filesystem::exists(cfg_.unix_socket_path));
  }
  EXPECT_EQ(open_fds(), fds_before) << "the failed start left a descriptor open (the listener)";
  ::close(taken);
  // The path is free for the next start.
  cfg_.tcp_port = 0;
  start();
  auto r = unix_client(kRead).Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// A start refused because another server holds the socket leaves that server's file alone.
TEST_F(Server, ARefusedStartKeepsTheOtherServersSocket) {
  start();
  ServerConfig e = cfg_;
  e.tcp_port = -1;
  {
    AgentServer second(e, hub_, commands_, jobs_);
    EXPECT_EQ(second.start().code(), StatusCode::kUnavailable);
  }
  EXPECT_TRUE(std::filesystem::exists(cfg_.unix_socket_path));
  auto r = unix_client(kRead).Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(Server, RefusesUnsafeConfigurations) {
  // A token file others can read.
  std::filesystem::permissions(token_file_, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  AgentServer a(cfg_, hub_, commands_, jobs_);
  EXPECT_EQ(a.start().code(), StatusCode::kInvalidArgument);
  // A non-loopback TCP host without allow_non_loopback, or without tokens.
  ServerConfig c = cfg_;
  c.token_file.clear();
  c.unix_socket_path.clear();
  c.tcp_host = "0.0.0.0";
  AgentServer b(c, hub_, commands_, jobs_);
  EXPECT_EQ(b.start().code(), StatusCode::kInvalidArgument);
  c.allow_non_loopback = true;
  AgentServer d(c, hub_, commands_, jobs_);
  EXPECT_EQ(d.start().code(), StatusCode::kInvalidArgument);
  // A second server on a socket that is being served.
  std::filesystem::permissions(
      token_file_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  start();
  ServerConfig e = cfg_;
  e.tcp_port = -1;
  AgentServer second(e, hub_, commands_, jobs_);
  EXPECT_EQ(second.start().code(), StatusCode::kUnavailable);
}

TEST_F(Server, MetricsNeedAReadTokenUnlessPublic) {
  hub_.publish(testing::sample_state());
  start();
  auto none = tcp().Get("/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto ok = tcp(kRead).Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(ok->body.find("flexwatt_gpu_power_watts{gpu=\"0\""), std::string::npos);
  server_.reset();
  cfg_.metrics_require_auth = false;
  start();
  auto open = tcp().Get("/metrics");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->status, 200);
}

}  // namespace
}  // namespace fw::agent
