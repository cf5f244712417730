#include "studies/agent_sweep.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/format.hpp"
#include "vocab/snapshot.hpp"

namespace fw::studies {
namespace {

using json = nlohmann::json;

// One agent connection: JSON in, JSON out; errors as Status with the agent's message.
class AgentHttp {
 public:
  explicit AgentHttp(const AgentSweepRequest& req) {
    std::string a = req.address;
    if (a.rfind("http://", 0) == 0) {
      cli_ = std::make_unique<httplib::Client>(a);
    } else {
      if (a.rfind("unix:", 0) == 0) a = a.substr(5);
      cli_ = std::make_unique<httplib::Client>(a);
      cli_->set_address_family(AF_UNIX);
    }
    cli_->set_connection_timeout(5);
    cli_->set_read_timeout(10);
    if (!req.token.empty()) headers_.emplace("Authorization", "Bearer " + req.token);
  }

  Result<json> call(const std::string& method, const std::string& path, const json& body = {}) {
    httplib::Result r = method == "GET"
                            ? cli_->Get(path.c_str(), headers_)
                            : cli_->Put(path.c_str(), headers_, body.dump(), "application/json");
    if (!r) {
      return Status::Unavailable("agent: " + method + " " + path + ": " +
                                 httplib::to_string(r.error()));
    }
    json j = json::parse(r->body, nullptr, false);
    if (r->status >= 300) {
      std::string msg = j.is_object() && j.contains("error") && j["error"].is_string()
                            ? j["error"].get<std::string>()
                            : r->body;
      std::string what =
          "agent: " + method + " " + path + ": HTTP " + std::to_string(r->status) + " " + msg;
      if (r->status == 401 || r->status == 403) return Status::PermissionDenied(what);
      // The request was built from checked flags: a refusal now is the node's state (a job
      // gone, a controller refused), a runtime failure (exit 1), not bad input.
      return Status::Unavailable(what);
    }
    if (j.is_discarded()) return Status::Internal("agent: " + path + ": not JSON");
    return j;
  }

 private:
  std::unique_ptr<httplib::Client> cli_;
  httplib::Headers headers_;
};

double number_or_nan(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

// The job's entry in a status document; null when absent.
json find_job(const json& status, const std::string& id) {
  for (const json& j : status.value("jobs", json::array())) {
    if (j.value("id", "") == id) return j;
  }
  return nullptr;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

struct Measured {
  double power_w = 0, throughput = 0;
  double span_s = 0;              // plant seconds measured
  double steps = 0;               // progress steps (or token reports) in the span
  const char* counted = "steps";  // what `steps` counts: "steps" or "token reports"
};

// Node energy counter (sum over GPUs), J; NaN when a GPU has none.
double node_energy_j(const json& status) {
  double e = 0;
  for (const json& g : status.value("gpus", json::array())) e += number_or_nan(g, "energy_j");
  return e;
}

// The plant's clock (simulated seconds under time_scale); the wall clock for older agents.
double plant_s(const json& status) {
  const double t = number_or_nan(status.value("loop", json::object()), "plant_time_s");
  return std::isfinite(t) ? t : number_or_nan(status, "time_unix_s");
}

using Clock = std::chrono::steady_clock;
double since_s(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Over whole progress steps: the span runs from the first status at which the job's progress
// has moved to the first status at which it moves again once measure_s wall seconds have
// passed since — so it holds a whole number of steps (at least one) and the job's step-sized
// token increments cannot alias with it (a span of fixed length holds 0, 1 or 2 long steps'
// tokens). Progress is steps_total when the job has reported a step by its first move, else
// tokens_total (a job reporting tokens only: its reports are the steps). Throughput: the
// tokens_total difference; node power: the GPUs' energy counters' difference (the mean of the
// polled node_power_w where a GPU has none); both over the span on the plant's clock. A move
// is seen up to one poll late at either end, so the span is exact to about poll_s / measure_s.
Result<Measured> measure(AgentHttp& http, const AgentSweepRequest& req, const std::string& job) {
  auto job_of = [&job](const json& status) -> Result<json> {
    json j = find_job(status, job);
    if (j.is_null())
      return Status::Unavailable("job '" + job + "' left the agent during the sweep");
    return j;
  };
  FW_ASSIGN_OR_RETURN(json s0, http.call("GET", "/v1/status"));
  FW_ASSIGN_OR_RETURN(json j0, job_of(s0));
  double steps = number_or_nan(j0, "steps_total"), tokens = number_or_nan(j0, "tokens_total");
  bool by_steps = false;
  json first, last;
  double sum_w = 0;
  int n = 0, moves = 0;
  Clock::time_point started{}, last_move = Clock::now();
  for (;;) {
    sleep_s(req.poll_s);
    FW_ASSIGN_OR_RETURN(json s, http.call("GET", "/v1/status"));
    FW_ASSIGN_OR_RETURN(json j, job_of(s));
    const double st = number_or_nan(j, "steps_total"), tk = number_or_nan(j, "tokens_total");
    const bool steps_moved = std::isfinite(st) && st != steps;
    const bool tokens_moved = std::isfinite(tk) && tk != tokens;
    steps = st;
    tokens = tk;
    if (first.is_null() && (steps_moved || tokens_moved)) by_steps = st > 0;
    const bool moved = by_steps ? steps_moved : tokens_moved;
    if (!first.is_null()) {
      const double w = number_or_nan(s, "node_power_w");
      if (std::isfinite(w)) {
        sum_w += w;
        ++n;
      }
    }
    if (moved) {
      last_move = Clock::now();
      ++moves;
      if (first.is_null()) {
        first = std::move(s);
        started = Clock::now();
      } else if (since_s(started) >= req.measure_s) {
        last = std::move(s);
        break;
      }
    } else if (since_s(last_move) > req.step_timeout_s) {
      return Status::Unavailable(strprintf(
          "job '%s': its progress (steps_total, tokens_total) did not move for %.0f s (a step "
          "longer than that, or a stalled job)",
          job.c_str(), req.step_timeout_s));
    }
  }
  Measured m;
  m.counted = by_steps ? "steps" : "token reports";
  m.span_s = plant_s(last) - plant_s(first);
  if (!(m.span_s > 0)) {
    return Status::Unavailable("agent: the state did not advance while measuring");
  }
  const json jf = find_job(first, job), jl = find_job(last, job);
  m.steps =
      by_steps ? number_or_nan(jl, "steps_total") - number_or_nan(jf, "steps_total") : moves - 1;
  m.throughput = (number_or_nan(jl, "tokens_total") - number_or_nan(jf, "tokens_total")) / m.span_s;
  const double de = node_energy_j(last) - node_energy_j(first);
  m.power_w = std::isfinite(de) && de > 0 ? de / m.span_s : (n > 0 ? sum_w / n : kUnset);
  if (!std::isfinite(m.power_w) || !std::isfinite(m.throughput)) {
    return Status::Unavailable("agent: no power or progress measured");
  }
  return m;
}

// The caps to sweep: as given (checked against the devices), or 6 from min to max.
Result<std::vector<double>> sweep_caps(const AgentSweepRequest& req, const json& status) {
  double lo = 0, hi = INFINITY;
  for (const json& g : status.value("gpus", json::array())) {
    lo = std::max(lo, number_or_nan(g, "cap_min_w"));
    hi = std::min(hi, number_or_nan(g, "cap_max_w"));
  }
  if (!(hi > lo) || !std::isfinite(hi)) {
    return Status::Unavailable("agent: the GPUs report no settable cap range");
  }
  std::vector<double> caps = req.caps_w;
  if (caps.empty()) {
    for (int i = 0; i < 6; ++i) caps.push_back(lo + (hi - lo) * i / 5.0);
  }
  std::sort(caps.begin(), caps.end());
  for (double c : caps) {
    if (!(c >= lo - 1e-9 && c <= hi + 1e-9)) {
      return Status::InvalidArgument("--caps: " + json(c).dump() + " W is outside the GPUs' [" +
                                     json(lo).dump() + ", " + json(hi).dump() + "] W");
    }
  }
  if (caps.back() < hi - 1e-9) caps.push_back(hi);  // the uncapped point (Pmax, Tmax)
  return caps;
}

// Sets the controller and waits until the loop has applied it.
Status set_controller(AgentHttp& http, const std::string& spec) {
  FW_ASSIGN_OR_RETURN(json r, http.call("PUT", "/v1/controller", {{"controller", spec}}));
  const uint64_t seq = r.value("config_version", uint64_t{0});
  for (int i = 0; i < 100; ++i) {
    FW_ASSIGN_OR_RETURN(json s, http.call("GET", "/v1/status"));
    if (s.value("applied_command_seq", uint64_t{0}) >= seq) {
      if (s.value("controller", "") != spec) {
        return Status::PermissionDenied("agent: controller '" + spec +
                                        "' was not taken (see its log)");
      }
      return Status::Ok();
    }
    sleep_s(0.05);
  }
  return Status::Unavailable("agent: the loop did not apply the controller within 5 s");
}

}  // namespace

Result<SweepResult> sweep_through_agent(const AgentSweepRequest& req,
                                        const std::function<void(const std::string&)>& log) {
  auto say = [&log](const std::string& m) {
    if (log) log(m);
  };
  if (!(req.dwell_s >= 0) || !(req.measure_s > 0) || !(req.poll_s > 0) ||
      !(req.step_timeout_s > 0)) {
    return Status::InvalidArgument("--dwell-s must be >= 0 s, --measure-s > 0 s");
  }
  AgentHttp http(req);
  FW_ASSIGN_OR_RETURN(json status, http.call("GET", "/v1/status"));
  // A job registered a moment ago shows in the state from the loop's next tick (<= 1 s).
  for (int i = 0; i < 20 && status.value("jobs", json::array()).empty(); ++i) {
    sleep_s(0.1);
    FW_ASSIGN_OR_RETURN(status, http.call("GET", "/v1/status"));
  }
  for (int i = 0; i < 20 && !req.job_id.empty() && find_job(status, req.job_id).is_null(); ++i) {
    sleep_s(0.1);
    FW_ASSIGN_OR_RETURN(status, http.call("GET", "/v1/status"));
  }
  if (status.value("read_only", false)) {
    return Status::PermissionDenied("agent is read_only: it writes no caps, so it cannot sweep");
  }
  std::string job = req.job_id;
  if (job.empty()) {
    const json jobs = status.value("jobs", json::array());
    if (jobs.size() != 1) {
      return Status::InvalidArgument("--job-id: the agent has " + std::to_string(jobs.size()) +
                                     " registered jobs; name one");
    }
    job = jobs[0].value("id", "");
  }
  if (find_job(status, job).is_null()) {
    return Status::InvalidArgument("--job-id: no job '" + job + "' registered on the agent");
  }
  FW_ASSIGN_OR_RETURN(std::vector<double> caps, sweep_caps(req, status));
  const std::string previous = status.value("controller", "");
  std::vector<SweepRow> points;
  Status failed;
  for (double cap : caps) {
    char spec[64];
    std::snprintf(spec, sizeof spec, "static:knob=caps,value=%g", cap);
    failed = set_controller(http, spec);
    if (!failed.ok()) break;
    sleep_s(req.dwell_s);
    auto m = measure(http, req, job);
    if (!m.ok()) {
      failed = m.status();
      break;
    }
    say(strprintf("cap %g W: %.1f W, %s tokens/s over %.0f %s (%.1f s)", cap, m->power_w,
                  format_si(m->throughput, 4).c_str(), m->steps, m->counted, m->span_s));
    points.push_back({cap, m->power_w, m->throughput});
  }
  // Put the operator's controller back whatever happened.
  Status back = set_controller(http, previous);
  if (!failed.ok()) return failed;
  if (!back.ok())
    return Status(back.code(), "restoring controller '" + previous + "': " + back.message());
  say("controller restored: " + previous);
  Result<SweepResult> res = sweep_result(job, points);
  // The points were measured as asked: a job they give no PFI for (no cap lowered its
  // throughput) is what the node showed, a runtime failure (exit 1), not bad input; a caller
  // that needs no PFI gets the points.
  if (!res.ok() && (req.require_pfi || req.publish_pfi)) {
    return Status::Unavailable("the measured points give no PFI: " + res.status().message());
  }
  SweepResult r;
  if (res.ok()) {
    r = std::move(res).value();
  } else {
    r.job = job;
    r.rows = points;
    r.pfi = std::numeric_limits<double>::quiet_NaN();
    say("the points give no PFI (" + res.status().message() + "): not needed here");
  }
  r.source = "agent " + req.address;
  r.throughput_unit = "tokens/s";
  if (req.publish_pfi) {
    auto put = http.call("PUT", "/v1/jobs/" + job + "/pfi", {{"pfi", r.pfi}, {"source", "sweep"}});
    if (!put.ok()) return put.status();
  }
  return r;
}

}  // namespace fw::studies
