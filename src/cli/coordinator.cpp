// flexwatt coordinator: one member of a site's coordinator group on etcd. Campaigns for
// leadership; the leader splits the site budget (or a lower grid target) across the
// registered nodes and writes fenced assignments (src/fleet/coordinator.hpp). Serves the
// grid endpoint (PUT /v1/grid/target, OpenADR 3 events, reports) when `listen` is set, and
// speaks to an OpenADR 3.1 VTN as the site's VEN when `openadr` is (fleet/openadr_link.hpp).

#include <cctype>
#include <csignal>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "agent/audit_log.hpp"
#include "agent/auth.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "fleet/coordinator_config.hpp"
#include "fleet/grid_server.hpp"

namespace fw::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int run_coordinator(int argc, char** argv) {
  CLI::App app(
      "Run one coordinator of a site (run two or three for failover): leader election on\n"
      "etcd, budget split across registered nodes, fenced assignments, grid endpoint.\n\n"
      "Example:\n"
      "  flexwatt coordinator --config coordinator.yaml\n"
      "  curl -X PUT localhost:8740/v1/grid/target -d '{\"value\":70,\"unit\":\"kilowatt\",\n"
      "       \"correlation_id\":\"dr-1\",\"end_time\":\"2026-12-01T18:00:00Z\"}'",
      "coordinator");
  std::string config_path;
  double duration_s = 0;
  bool json = false;
  app.add_option("--config", config_path, "coordinator YAML (docs/fleet.md)")->required();
  app.add_option("--duration-s", duration_s, "stop after this many seconds (0: until SIGINT)");
  app.add_flag("--json", json, "print the final statistics as JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto cfg = fleet::load_coordinator_config(config_path);
  if (!cfg.ok()) return fail("coordinator", cfg.status());
  fleet::EtcdClientOptions etcd;
  etcd.endpoints = cfg->etcd;
  etcd.security = cfg->etcd_security;
  auto coord = fleet::Coordinator::Start(etcd, cfg->options);
  if (!coord.ok()) return fail("coordinator", coord.status());
  // Tokens in the agent's file format; every write is one audit line (file or stderr).
  std::optional<agent::TokenStore> tokens;
  if (!cfg->token_file.empty()) {
    auto t = agent::TokenStore::load(cfg->token_file);
    if (!t.ok()) return fail("coordinator", t.status());
    tokens = std::move(t).value();
  }
  auto audit_log = std::make_shared<agent::AuditLog>();
  if (!cfg->audit_log.empty()) {
    if (Status s = audit_log->open(cfg->audit_log); !s.ok()) return fail("coordinator", s);
  }
  fleet::GridAuth auth;
  auth.allow_unauthenticated_writes = cfg->allow_unauthenticated_writes;
  if (tokens) {
    auth.lookup = [&tokens](std::string_view token) -> std::optional<std::pair<std::string, int>> {
      auto who = tokens->find(token);
      if (!who) return std::nullopt;
      return std::make_pair(who->subject, static_cast<int>(who->scope));
    };
  }
  if (!cfg->audit_log.empty()) {
    auth.audit = [audit_log](const fleet::GridAuth::Write& w) {
      agent::AuditRecord r;
      r.time_unix_s = w.time_unix_s;
      r.who = w.who;
      r.remote = w.remote;
      r.method = w.method;
      r.path = w.path;
      r.body = w.body;
      r.status = w.status;
      audit_log->write(r);
    };
  }
  std::unique_ptr<fleet::GridServer> grid;
  if (!cfg->listen_host.empty()) {
    auto g = fleet::GridServer::Start(coord->get(), cfg->listen_host, cfg->listen_port,
                                      cfg->grid_ramp_w_per_s, 1.0, std::move(auth));
    if (!g.ok()) return fail("coordinator", g.status());
    grid = std::move(*g);
  }
  // The OpenADR VEN, on threads of its own (fleet/openadr_link.hpp): while this member leads
  // it registers, subscribes, polls the VTN's events into the schedule every poll_s and posts
  // the reports the events ask for; a VTN that is down gets retries with back-off.
  std::unique_ptr<fleet::OpenAdrLink> ven;
  if (cfg->openadr) {
    fleet::VenOptions vo = cfg->ven;
    if (!cfg->ven_token_file.empty()) {
      auto t = read_text_file(cfg->ven_token_file);
      if (!t.ok()) return fail("coordinator", t.status());
      vo.token = *t;
      while (!vo.token.empty() && std::isspace(static_cast<unsigned char>(vo.token.back())))
        vo.token.pop_back();
    }
    auto v = fleet::OpenAdrVen::Create(vo);
    if (!v.ok()) return fail("coordinator", v.status());
    fleet::Coordinator* c = coord->get();
    const std::string id = cfg->options.id;
    auto link = fleet::OpenAdrLink::Start(
        std::move(*v), cfg->ven_link, fleet::coordinator_reader(c),
        [c](const std::string& g, const std::vector<fleet::GridTarget>& t) {
          return c->schedule_grid(g, t);
        },
        [id](const std::string& m) {
          std::fprintf(stderr, "coordinator %s: %s\n", id.c_str(), m.c_str());
        });
    if (!link.ok()) return fail("coordinator", link.status());
    ven = std::move(*link);
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::fprintf(stderr, "coordinator %s of site %s started\n", cfg->options.id.c_str(),
               cfg->options.site.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  bool was_leader = false;
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const bool lead = (*coord)->leader();
    if (lead != was_leader) {
      std::fprintf(stderr, "coordinator %s: %s\n", cfg->options.id.c_str(),
                   lead ? "leading" : "following");
      was_leader = lead;
    }
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (duration_s > 0 && el >= duration_s) break;
  }
  if (ven) ven->stop();
  if (grid) grid->stop();
  const int64_t writes_accepted = grid ? grid->writes_accepted() : 0;
  const int64_t writes_refused = grid ? grid->writes_refused() : 0;
  const fleet::CoordinatorStats st = (*coord)->stats();
  (*coord)->stop(true);
  nlohmann::json j = {{"id", cfg->options.id},
                      {"rounds", st.rounds},
                      {"keys_written", st.keys_written},
                      {"txns", st.txns},
                      {"fenced_refusals", st.fenced_refusals},
                      {"elections_won", st.elections_won},
                      {"ramp_state", st.ramp_state},
                      {"grid_writes_accepted", writes_accepted},
                      {"grid_writes_refused", writes_refused},
                      {"ramp_events", nlohmann::json::array()}};
  for (const auto& e : st.ramp_events) j["ramp_events"].push_back(fleet::to_json(e));
  if (ven) {
    const fleet::OpenAdrLinkStats vs = ven->stats();
    j["openadr"] = {{"ven_id", vs.ven_id},
                    {"subscription_id", vs.subscription_id},
                    {"registrations", vs.registrations},
                    {"subscriptions", vs.subscriptions},
                    {"polls", vs.polls},
                    {"notifications", vs.notifications},
                    {"reports_posted", vs.reports_posted},
                    {"reports_dropped", vs.reports_dropped},
                    {"reports_owed", vs.reports_owed},
                    {"vtn_failures", vs.vtn_failures}};
  }
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("coordinator %s: %lld rounds, %lld keys written, %lld elections won\n",
                cfg->options.id.c_str(), (long long)st.rounds, (long long)st.keys_written,
                (long long)st.elections_won);
  }
  return 0;
}

}  // namespace

FW_VERB("coordinator", "site coordinator on etcd: elected leader splits the budget",
        run_coordinator);

}  // namespace fw::cli
