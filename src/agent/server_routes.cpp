// Request handlers of AgentServer (see docs/agent-api.md for the contract of each).

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "agent/agent_log.hpp"
#include "agent/metrics.hpp"
#include "agent/server_impl.hpp"
#include "core/version.hpp"
#include "report/html_page.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kJobId = "([A-Za-z0-9_.-]{1,64})";

// A query parameter as a number in [lo, hi]; `fallback` when absent; nullopt when invalid.
std::optional<double> query_number(const httplib::Request& req, const char* key, double lo,
                                   double hi, double fallback) {
  if (!req.has_param(key)) return fallback;
  std::string v = req.get_param_value(key);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x) || x < lo || x > hi) return std::nullopt;
  return x;
}

json job_knobs_body(const RegisteredJob& j, bool changed) {
  json body = {{"id", j.id},
               {"knobs", knobs_json(j.knobs)},
               {"knob_version", j.knob_version},
               {"changed", changed},
               {"paused", j.paused}};
  if (j.start_at_unix_s > 0) body["start_at_unix_s"] = j.start_at_unix_s;  // the start gate
  if (j.stop_at_unix_s > 0) body["stop_at_unix_s"] = j.stop_at_unix_s;     // the stop gate
  if (j.fill) body["fill_w"] = fill_json(j);  // a job with the hook: its GPUs' fill targets
  return body;
}

}  // namespace

const std::vector<RouteSpec>& route_table() {
  static const std::vector<RouteSpec> table = {
      {"GET", "/", Scope::kNone},
      {"GET", "/healthz", Scope::kNone},
      {"GET", "/v1/discover", Scope::kNone},
      {"GET", "/v1/status", Scope::kRead},
      {"GET", "/v1/stream", Scope::kRead},
      {"GET", "/v1/history", Scope::kRead},
      {"GET", "/metrics", Scope::kRead},
      {"PUT", "/v1/budget", Scope::kControl},
      {"PUT", "/v1/controller", Scope::kAdmin},
      {"GET", "/v1/jobs", Scope::kRead},
      {"POST", "/v1/jobs", Scope::kControl},
      {"POST", "/v1/jobs/{id}/progress", Scope::kControl},
      {"GET", "/v1/jobs/{id}/knobs", Scope::kRead},
      {"DELETE", "/v1/jobs/{id}", Scope::kControl},
      {"PUT", "/v1/jobs/{id}/pfi", Scope::kControl},
  };
  return table;
}

std::string route_regex(const RouteSpec& r) {
  std::string p = r.path;
  if (auto at = p.find("{id}"); at != std::string::npos) p.replace(at, 4, kJobId);
  return p;
}

void AgentServer::Impl::install_routes(net::GatedServer& s) {
  // Each row of route_table() with its handler: the scope is the table's (/metrics' per
  // config), registered with the gate, which checks it before a body is read.
  size_t bound = 0;
  auto on = [&](const char* method, const std::string& path, Handler fn) {
    for (const RouteSpec& r : route_table()) {
      if (r.method != std::string_view(method) || r.path != path) continue;
      Scope need = r.scope;
      if (path == "/metrics" && !cfg.metrics_require_auth) need = Scope::kNone;
      s.route(method, route_regex(r), static_cast<int>(need), guard(need, std::move(fn)));
      ++bound;
      return;
    }
    std::abort();  // a handler for a route the table does not list
  };
  on("GET", "/", [](const auto&, auto& res, const auto&) {
    res.set_content(std::string(report::dashboard_html()), "text/html; charset=utf-8");
  });
  on("GET", "/healthz", [](const auto&, auto& res, const auto&) {
    send_json(res, 200, json{{"ok", true}, {"version", kVersion}}.dump());
  });
  on("GET", "/v1/discover",
     [this](const auto& req, auto& res, const auto&) { discover(req, res); });
  on("GET", "/v1/status", [this](const auto&, auto& res, const auto&) { status(res); });
  on("GET", "/v1/stream", [this](const auto& req, auto& res, const auto&) { stream(req, res); });
  on("GET", "/v1/history", [this](const auto& req, auto& res, const auto&) { history(req, res); });
  on("GET", "/metrics", [this](const auto&, auto& res, const auto&) { metrics(res); });
  on("PUT", "/v1/budget",
     [this](const auto& req, auto& res, const auto& who) { put_budget(req, res, who); });
  on("PUT", "/v1/controller",
     [this](const auto& req, auto& res, const auto& who) { put_controller(req, res, who); });
  on("GET", "/v1/jobs", [this](const auto&, auto& res, const auto&) { list_jobs(res); });
  on("POST", "/v1/jobs", [this](const auto& req, auto& res, const auto&) { post_job(req, res); });
  on("POST", "/v1/jobs/{id}/progress",
     [this](const auto& req, auto& res, const auto&) { post_progress(req, res); });
  on("GET", "/v1/jobs/{id}/knobs",
     [this](const auto& req, auto& res, const auto&) { get_knobs(req, res); });
  on("PUT", "/v1/jobs/{id}/pfi",
     [this](const auto& req, auto& res, const auto&) { put_pfi(req, res); });
  on("DELETE", "/v1/jobs/{id}",
     [this](const auto& req, auto& res, const auto&) { delete_job(req, res); });
  if (bound != route_table().size()) std::abort();  // a row of the table without a handler
}

void AgentServer::Impl::discover(const httplib::Request&, httplib::Response& res) {
  auto p = hub.latest();
  json gpus = json::array();
  for (const auto& g : p->state.gpus) {
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"name", g.name},
                    {"cap_min_w", num(g.cap_min_w)},
                    {"cap_max_w", num(g.cap_max_w)},
                    {"cap_default_w", num(g.cap_default_w)}});
  }
  json endpoints = json::array();
  for (const auto& r : route_table()) {
    endpoints.push_back({{"method", r.method},
                         {"path", r.path},
                         {"scope", r.scope == Scope::kNone ? "none" : scope_name(r.scope)}});
  }
  send_json(res, 200,
            json{{"api", "v1"},
                 {"version", kVersion},
                 {"hostname", cfg.hostname},
                 {"auth_required", tokens.has_value()},
                 {"scopes", {"read", "control", "admin"}},
                 {"metrics_auth_required", tokens.has_value() && cfg.metrics_require_auth},
                 {"max_body_bytes", cfg.max_body_bytes},
                 {"max_wait_s", cfg.max_wait_s},
                 {"gpus", std::move(gpus)},
                 {"endpoints", std::move(endpoints)}}
                .dump());
}

void AgentServer::Impl::status(httplib::Response& res) {
  auto p = hub.latest();
  res.set_header("X-Flexwatt-Config-Version", std::to_string(commands.version()));
  send_json(res, 200, p->json);
}

void AgentServer::Impl::history(const httplib::Request& req, httplib::Response& res) {
  auto span_s = query_number(req, "span_s", 1, 3600, 900);
  if (!span_s) return send_error(res, 422, "span_s: must be a number of seconds in [1, 3600]");
  auto max_points =
      query_number(req, "max_points", 1, static_cast<double>(HistoryRing::kMaxPoints), 1200);
  if (!max_points || *max_points != std::floor(*max_points)) {
    return send_error(
        res, 422,
        "max_points: must be an integer in [1, " + std::to_string(HistoryRing::kMaxPoints) + "]");
  }
  send_json(res, 200, hub.history().to_json(*span_s, static_cast<size_t>(*max_points)).dump());
}

void AgentServer::Impl::metrics(httplib::Response& res) {
  auto p = hub.latest();
  res.status = 200;
  res.set_content(render_metrics(p->state, kVersion, unix_now_s(), cfg.metrics_dcgm_names),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void AgentServer::Impl::stream(const httplib::Request& req, httplib::Response& res) {
  auto max_events = query_number(req, "max_events", 1, 1e9, 0);
  if (!max_events) return send_error(res, 422, "max_events: must be an integer in [1, 1e9]");
  if (!take_waiter()) return send_error(res, 503, "too many open streams and long-polls");
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto limit = static_cast<uint64_t>(*max_events);
  auto keepalive = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(cfg.keepalive_s));
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, limit, keepalive, last = uint64_t{0}, sent = uint64_t{0}](
          size_t, httplib::DataSink& sink) mutable {
        auto p =
            hub.wait_newer(last, SteadyClock::now() + keepalive, [this] { return cancelled(); });
        if (cancelled()) return false;
        std::string chunk;
        if (p->state.version > last) {
          last = p->state.version;
          chunk = "id: " + std::to_string(last) + "\nevent: state\ndata: " + p->json + "\n\n";
          ++sent;
        } else {
          chunk = ": keep-alive\n\n";
        }
        if (!sink.write(chunk.data(), chunk.size())) return false;
        if (limit > 0 && sent >= limit) sink.done();
        return true;
      },
      [this](bool) { release_waiter(); });
}

void AgentServer::Impl::submit(AgentCommand cmd, std::optional<uint64_t> expected,
                               httplib::Response& res) {
  auto sub = commands.submit(std::move(cmd), expected);
  if (sub.outcome == CommandQueue::Outcome::kConflict) {
    return send_error(res, 409,
                      "expected_version " + std::to_string(*expected) +
                          " is stale; the config version is " + std::to_string(sub.seq));
  }
  if (sub.outcome == CommandQueue::Outcome::kFull) {
    return send_error(res, 503, "too many commands waiting for the control loop");
  }
  send_json(res, 202, json{{"accepted", true}, {"config_version", sub.seq}}.dump());
}

void AgentServer::Impl::put_budget(const httplib::Request& req, httplib::Response& res,
                                   const Principal& who) {
  BudgetRequest r;
  if (auto err = parse_budget_request(req.body, r))
    return send_error(res, err->status, err->message);
  AgentCommand cmd;
  cmd.who = who.subject;
  cmd.time_unix_s = unix_now_s();
  r.budget.set_unix_s = cmd.time_unix_s;
  cmd.what = BudgetChange{r.budget};
  submit(std::move(cmd), r.expected_version, res);
}

void AgentServer::Impl::put_controller(const httplib::Request& req, httplib::Response& res,
                                       const Principal& who) {
  ControllerRequest r;
  if (auto err = parse_controller_request(req.body, r)) {
    return send_error(res, err->status, err->message);
  }
  if (validate_controller) {
    if (Status st = validate_controller(r.spec); !st.ok()) {
      return send_error(res, 422, "controller: " + st.message());
    }
  }
  AgentCommand cmd;
  cmd.who = who.subject;
  cmd.time_unix_s = unix_now_s();
  cmd.what = ControllerChange{r.spec};
  submit(std::move(cmd), r.expected_version, res);
}

void AgentServer::Impl::list_jobs(httplib::Response& res) {
  json out = json::array();
  for (const auto& j : jobs.snapshot()) out.push_back(to_json(j));
  send_json(res, 200, json{{"jobs", std::move(out)}}.dump());
}

void AgentServer::Impl::post_job(const httplib::Request& req, httplib::Response& res) {
  JobRequest r;
  if (auto err = parse_job_request(req.body, r)) return send_error(res, err->status, err->message);
  if (!r.gpu_uuids.empty()) {  // GPUs by identity: the node's NVML indices, whatever the order
    auto idx = jobs.resolve_uuids(r.gpu_uuids);
    if (!idx.ok()) return send_error(res, 422, idx.status().message());
    r.info.gpus = *idx;
    std::string map;
    for (size_t i = 0; i < idx->size(); ++i) {
      map += (i ? ", " : "") + r.gpu_uuids[i] + " -> " + std::to_string((*idx)[i]);
    }
    log_line("job " + (r.id.empty() ? std::string("(unnamed)") : r.id) +
             ": GPUs by UUID resolved to NVML indices: " + map);
  }
  if (r.id.empty()) {  // assign the first free "job-N"
    do {
      r.id = "job-" + std::to_string(next_job++);
    } while (jobs.get(r.id));
  }
  switch (jobs.add(r.id, r.info, r.fill)) {
    case JobRegistry::Outcome::kExists:
      return send_error(res, 409, "job '" + r.id + "' is already registered");
    case JobRegistry::Outcome::kFull:
      return send_error(res, 409, "too many jobs registered on this node");
    case JobRegistry::Outcome::kUnknownGpu: {
      std::string have;
      for (int g : jobs.gpu_indices()) have += (have.empty() ? "" : ", ") + std::to_string(g);
      return send_error(res, 422, "gpus: an index is not a GPU this agent manages (" + have + ")");
    }
    default:
      break;
  }
  if (std::isfinite(r.pfi)) jobs.set_pfi(r.id, r.pfi, "registration");
  auto j = jobs.get(r.id);
  res.set_header("Location", "/v1/jobs/" + r.id);
  send_json(res, 201, j ? to_json(*j).dump() : "{}");
}

void AgentServer::Impl::post_progress(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  JobProgress p;
  if (auto err = parse_progress_request(req.body, p)) {
    return send_error(res, err->status, err->message);
  }
  switch (jobs.report(id, p)) {
    case JobRegistry::Outcome::kNotFound:
      return send_error(res, 404, "no job '" + id + "'");
    case JobRegistry::Outcome::kRegressed:
      return send_error(res, 422, "tokens_total and steps_total must not decrease");
    default:
      break;
  }
  auto j = jobs.get(id);
  if (!j) return send_error(res, 404, "no job '" + id + "'");
  send_json(res, 200, job_knobs_body(*j, false).dump());
}

void AgentServer::Impl::get_knobs(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  auto wait_s = query_number(req, "wait_s", 0, cfg.max_wait_s, 0);
  if (!wait_s) {
    return send_error(res, 422,
                      "wait_s: must be a number in [0, " + json(cfg.max_wait_s).dump() + "]");
  }
  auto since = query_number(req, "since", 0, 1e18, -1);
  if (!since) return send_error(res, 422, "since: must be a non-negative knob_version");
  auto now = jobs.get(id);
  if (!now) return send_error(res, 404, "no job '" + id + "'");
  if (*since < 0 || now->knob_version > *since || *wait_s <= 0) {
    return send_json(res, 200,
                     job_knobs_body(*now, *since < 0 || now->knob_version > *since).dump());
  }
  if (!take_waiter()) return send_error(res, 503, "too many open streams and long-polls");
  auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                           std::chrono::duration<double>(*wait_s));
  auto j =
      jobs.wait_knobs(id, static_cast<uint64_t>(*since), deadline, [this] { return cancelled(); });
  release_waiter();
  if (!j) return send_error(res, 404, "job '" + id + "' was removed");
  send_json(res, 200, job_knobs_body(*j, j->knob_version > *since).dump());
}

void AgentServer::Impl::put_pfi(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  PfiRequest r;
  if (auto err = parse_pfi_request(req.body, r)) return send_error(res, err->status, err->message);
  if (jobs.set_pfi(id, r.pfi, r.source) == JobRegistry::Outcome::kNotFound) {
    return send_error(res, 404, "no job '" + id + "'");
  }
  auto j = jobs.get(id);
  if (!j) return send_error(res, 404, "no job '" + id + "'");
  send_json(res, 200, to_json(*j).dump());
}

void AgentServer::Impl::delete_job(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  if (jobs.remove(id) == JobRegistry::Outcome::kNotFound) {
    return send_error(res, 404, "no job '" + id + "'");
  }
  send_json(res, 200, json{{"removed", id}}.dump());
}

}  // namespace fw::agent
