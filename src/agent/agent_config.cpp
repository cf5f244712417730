#include "agent/agent_config.hpp"

#include <filesystem>
#include <string_view>

#include "core/config.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/etcd_security_config.hpp"

namespace fw::agent {

std::vector<std::string> default_policy_dirs() {
  std::vector<std::string> dirs;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.is_absolute()) {
    const std::filesystem::path prefix = exe.parent_path().parent_path();
    dirs.push_back((prefix / "share/flexwatt/policies").string());
    dirs.push_back((prefix / "policies").string());
  }
  dirs.push_back("/var/lib/flexwatt/policies");
  return dirs;
}

namespace {

Status parse_server(const ConfigNode& n, ServerConfig& s) {
  if (!n.defined()) return Status::Ok();
  if (!n.is_map()) return n.error("expected a map");
  FW_RETURN_IF_ERROR(n.reject_unknown({"unix_socket",
                                       "socket_mode",
                                       "tcp_host",
                                       "tcp_port",
                                       "allow_non_loopback",
                                       "token_file",
                                       "audit_log",
                                       "metrics_require_auth",
                                       "threads",
                                       "worker_nice",
                                       "idle_timeout_s",
                                       "head_timeout_s",
                                       "body_timeout_s",
                                       "max_connections",
                                       "max_connections_per_client",
                                       "audit_log_max_bytes",
                                       "audit_log_keep",
                                       "audit_rate_per_s",
                                       "audit_burst",
                                       "metrics_dcgm_names"}));
  FW_ASSIGN_OR_RETURN(s.unix_socket_path, n.get_string("unix_socket", s.unix_socket_path));
  if (n.has("socket_mode")) {
    // A file mode is octal as written (0660, 660 or 0o660), whatever YAML makes of the digits.
    // Read in place, not moved out of the Result: GCC 12 (Release) saw the moved string's
    // inline buffer as maybe uninitialized in the prefix compare (-Wmaybe-uninitialized).
    const Result<std::string> mode_text = n["socket_mode"].as_string();
    if (!mode_text.ok()) return mode_text.status();
    const std::string& text = mode_text.value();
    const std::string_view digits =
        std::string_view(text).starts_with("0o") ? std::string_view(text).substr(2) : text;
    int mode = 0;
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char ch : digits) {
      ok = ok && ch >= '0' && ch <= '7';
      mode = mode * 8 + (ch - '0');
    }
    if (!ok || mode > 0777) {
      return n["socket_mode"].error("'" + text + "' is not an octal file mode up to 0777");
    }
    s.unix_socket_mode = mode;
  }
  FW_ASSIGN_OR_RETURN(s.tcp_host, n.get_string("tcp_host", s.tcp_host));
  FW_ASSIGN_OR_RETURN(int64_t port, n.get_int("tcp_port", s.tcp_port, -1, 65535));
  s.tcp_port = static_cast<int>(port);
  FW_ASSIGN_OR_RETURN(s.allow_non_loopback, n.get_bool("allow_non_loopback", s.allow_non_loopback));
  FW_ASSIGN_OR_RETURN(s.token_file, n.get_string("token_file", s.token_file));
  FW_ASSIGN_OR_RETURN(s.audit_log_path, n.get_string("audit_log", s.audit_log_path));
  FW_ASSIGN_OR_RETURN(s.metrics_require_auth,
                      n.get_bool("metrics_require_auth", s.metrics_require_auth));
  FW_ASSIGN_OR_RETURN(s.metrics_dcgm_names, n.get_bool("metrics_dcgm_names", s.metrics_dcgm_names));
  FW_ASSIGN_OR_RETURN(int64_t threads, n.get_int("threads", s.threads, 1, 256));
  FW_ASSIGN_OR_RETURN(int64_t nice, n.get_int("worker_nice", s.worker_nice, 0, 19));
  s.worker_nice = static_cast<int>(nice);
  s.threads = static_cast<int>(threads);
  // Connection and audit limits (docs/agent-api.md "Limits").
  FW_ASSIGN_OR_RETURN(s.idle_timeout_s,
                      n.get_double("idle_timeout_s", s.idle_timeout_s, 0.1, 3600));
  FW_ASSIGN_OR_RETURN(s.head_timeout_s, n.get_double("head_timeout_s", s.head_timeout_s, 0.1, 600));
  FW_ASSIGN_OR_RETURN(s.body_timeout_s, n.get_double("body_timeout_s", s.body_timeout_s, 0.1, 600));
  FW_ASSIGN_OR_RETURN(int64_t conns, n.get_int("max_connections", s.max_connections, 1, 65536));
  FW_ASSIGN_OR_RETURN(int64_t per_client, n.get_int("max_connections_per_client",
                                                    s.max_connections_per_client, 1, 65536));
  s.max_connections = static_cast<int>(conns);
  s.max_connections_per_client = static_cast<int>(per_client);
  FW_ASSIGN_OR_RETURN(int64_t audit_bytes,
                      n.get_int("audit_log_max_bytes", static_cast<int64_t>(s.audit_log_max_bytes),
                                4096, int64_t{1} << 40));
  FW_ASSIGN_OR_RETURN(int64_t audit_keep, n.get_int("audit_log_keep", s.audit_log_keep, 0, 100));
  s.audit_log_max_bytes = static_cast<size_t>(audit_bytes);
  s.audit_log_keep = static_cast<int>(audit_keep);
  FW_ASSIGN_OR_RETURN(s.audit_rate_per_s,
                      n.get_double("audit_rate_per_s", s.audit_rate_per_s, 0.01, 1e6));
  FW_ASSIGN_OR_RETURN(s.audit_burst, n.get_double("audit_burst", s.audit_burst, 1, 1e6));
  return Status::Ok();
}

Status parse_limiter(const ConfigNode& n, LimiterConfig& l) {
  if (!n.defined()) return Status::Ok();
  if (!n.is_map()) return n.error("expected a map");
  FW_RETURN_IF_ERROR(n.reject_unknown({"max_cap_change_w", "max_knob_change_frac", "min_dwell_s",
                                       "budget_shield", "shield_on_caps", "cap_notch_w"}));
  FW_ASSIGN_OR_RETURN(l.max_cap_change_w,
                      n.get_double("max_cap_change_w", l.max_cap_change_w, 1, 1e5));
  FW_ASSIGN_OR_RETURN(l.max_knob_change_frac,
                      n.get_double("max_knob_change_frac", l.max_knob_change_frac, 0.001, 1));
  FW_ASSIGN_OR_RETURN(l.min_dwell_s, n.get_double("min_dwell_s", l.min_dwell_s, 0, 3600));
  FW_ASSIGN_OR_RETURN(l.budget_shield, n.get_bool("budget_shield", l.budget_shield));
  FW_ASSIGN_OR_RETURN(l.shield_on_caps, n.get_bool("shield_on_caps", l.shield_on_caps));
  FW_ASSIGN_OR_RETURN(l.cap_notch_w, n.get_double("cap_notch_w", l.cap_notch_w, 1, 1000));
  return Status::Ok();
}

Status parse_fleet(const ConfigNode& n, AgentFleetConfig& f) {
  if (!n.defined()) return Status::Ok();
  if (!n.is_map()) return n.error("expected a map");
  FW_RETURN_IF_ERROR(
      n.reject_unknown({"etcd", "site", "node", "safe_share_w", "lease_ttl_s",
                        "allow_unauthenticated_writes", "etcd_tls", "etcd_auth", "draw_curve"}));
  const ConfigNode etcd = n["etcd"];
  if (!etcd.is_sequence() || etcd.size() == 0) return etcd.error("a non-empty list of URLs");
  for (size_t i = 0; i < etcd.size(); ++i) {
    FW_ASSIGN_OR_RETURN(std::string url, etcd.at(i).as_string());
    if (auto e = fleet::parse_endpoint(url); !e.ok()) return etcd.at(i).error(e.status().message());
    f.etcd.push_back(url);
  }
  FW_ASSIGN_OR_RETURN(f.etcd_security, fleet::parse_etcd_security(n, f.etcd));
  FW_ASSIGN_OR_RETURN(f.site, n.get_string("site", ""));
  if (f.site.empty()) return n["site"].error("required (the fleet's site name)");
  FW_ASSIGN_OR_RETURN(f.node, n.get_string("node", f.node));
  if (!n.has("safe_share_w")) return n["safe_share_w"].error("required (node fallback share, W)");
  FW_ASSIGN_OR_RETURN(f.safe_share_w, n.get_double("safe_share_w", 0, 1, 1e9));
  FW_ASSIGN_OR_RETURN(f.lease_ttl_s, n.get_double("lease_ttl_s", f.lease_ttl_s, 2, 60));
  FW_ASSIGN_OR_RETURN(f.allow_unauthenticated_writes,
                      n.get_bool("allow_unauthenticated_writes", f.allow_unauthenticated_writes));
  if (const ConfigNode c = n["draw_curve"]; c.defined()) {
    if (!c.is_sequence() || c.size() < 2 || c.size() > 64) {
      return c.error("a list of 2..64 [cap_w, draw_w] pairs (the job's sweep per GPU)");
    }
    for (size_t i = 0; i < c.size(); ++i) {
      const ConfigNode p = c.at(i);
      if (!p.is_sequence() || p.size() != 2) return p.error("expected [cap_w, draw_w]");
      FW_ASSIGN_OR_RETURN(double cap, p.at(0).as_double());
      FW_ASSIGN_OR_RETURN(double draw, p.at(1).as_double());
      if (!(cap >= 0 && cap <= 5000) || !(draw >= 0 && draw <= 5000)) {
        return p.error("cap_w and draw_w must be in [0, 5000] W");
      }
      if (!f.draw_curve.empty() && !(cap > f.draw_curve.back().first)) {
        return p.error("caps must increase");
      }
      f.draw_curve.emplace_back(cap, draw);
    }
  }
  return Status::Ok();
}

Status parse_root(const ConfigNode& r, AgentConfig& c) {
  if (!r.is_map()) return r.error("expected a map of settings");
  FW_RETURN_IF_ERROR(r.reject_unknown({"backend",
                                       "nvml_library",
                                       "gpus",
                                       "seed",
                                       "sim_set",
                                       "time_scale",
                                       "period_s",
                                       "loop_priority",
                                       "controller",
                                       "policy_dirs",
                                       "budget_w",
                                       "window_s",
                                       "safe_cap_w",
                                       "stale_after_s",
                                       "job_silent_after_s",
                                       "duration_s",
                                       "restore_file",
                                       "lock_file",
                                       "trace_dir",
                                       "trace_rotate_ticks",
                                       "trace_keep",
                                       "limiter",
                                       "server",
                                       "read_only",
                                       "fleet",
                                       "nvml_deadline_s",
                                       "sim_knobs_without_job"}));
  FW_ASSIGN_OR_RETURN(c.plant.backend, r.get_string("backend", c.plant.backend));
  FW_ASSIGN_OR_RETURN(c.plant.nvml_library, r.get_string("nvml_library", c.plant.nvml_library));
  if (r.has("gpus")) {
    ConfigNode g = r["gpus"];
    if (!g.is_sequence()) return g.error("expected a list of GPU indices");
    for (size_t i = 0; i < g.size(); ++i) {
      FW_ASSIGN_OR_RETURN(int64_t v, g.at(i).as_int(0, 1023));
      c.plant.gpus.push_back(static_cast<int>(v));
    }
  }
  if (r.has("sim_set")) {
    ConfigNode s = r["sim_set"];
    if (!s.is_sequence()) return s.error("expected a list of key=value overrides");
    for (size_t i = 0; i < s.size(); ++i) {
      FW_ASSIGN_OR_RETURN(std::string v, s.at(i).as_string());
      c.plant.sim_overrides.push_back(v);
    }
  }
  FW_ASSIGN_OR_RETURN(int64_t seed, r.get_int("seed", 1, 0, INT64_MAX));
  c.plant.seed = static_cast<uint64_t>(seed);
  FW_ASSIGN_OR_RETURN(c.plant.time_scale,
                      r.get_double("time_scale", c.plant.time_scale, 1.0, 1000.0));
  if (c.plant.time_scale != 1 && c.plant.backend.rfind("sim:", 0) != 0) {
    return r["time_scale"].error("only the sim backend runs faster than real time (tests, demos)");
  }
  FW_ASSIGN_OR_RETURN(c.plant.sim_knobs_without_job,
                      r.get_bool("sim_knobs_without_job", c.plant.sim_knobs_without_job));
  if (c.plant.sim_knobs_without_job && c.plant.backend.rfind("sim:", 0) != 0) {
    return r["sim_knobs_without_job"].error("only the sim backend has jobs of its own");
  }
  FW_ASSIGN_OR_RETURN(c.period_s, r.get_double("period_s", c.period_s, 0.1, 1.0));
  FW_ASSIGN_OR_RETURN(c.plant.nvml_deadline_s,
                      r.get_double("nvml_deadline_s", c.plant.nvml_deadline_s, 0.05, 60));
  FW_ASSIGN_OR_RETURN(int64_t prio, r.get_int("loop_priority", c.loop_priority, 0, 99));
  c.loop_priority = static_cast<int>(prio);
  FW_ASSIGN_OR_RETURN(c.controller, r.get_string("controller", c.controller));
  if (r.has("policy_dirs")) {
    ConfigNode d = r["policy_dirs"];
    if (!d.is_sequence()) return d.error("expected a list of absolute directories");
    c.policy_dirs.clear();
    for (size_t i = 0; i < d.size(); ++i) {
      FW_ASSIGN_OR_RETURN(std::string dir, d.at(i).as_string());
      if (dir.empty() || dir.front() != '/') {
        return d.at(i).error("'" + dir + "' is not an absolute directory");
      }
      c.policy_dirs.push_back(dir);
    }
  }
  FW_ASSIGN_OR_RETURN(c.budget_w, r.get_double("budget_w", c.budget_w, 1, 1e9));
  FW_ASSIGN_OR_RETURN(c.window_s, r.get_double("window_s", c.window_s, 0.1, 86400));
  FW_ASSIGN_OR_RETURN(c.safe_cap_w, r.get_double("safe_cap_w", c.safe_cap_w, 1, 1e5));
  FW_ASSIGN_OR_RETURN(c.stale_after_s, r.get_double("stale_after_s", c.stale_after_s, 0.01, 60));
  FW_ASSIGN_OR_RETURN(c.job_silent_after_s,
                      r.get_double("job_silent_after_s", c.job_silent_after_s, 0, 86400));
  FW_ASSIGN_OR_RETURN(c.duration_s, r.get_double("duration_s", c.duration_s, 0, 1e9));
  FW_ASSIGN_OR_RETURN(c.read_only, r.get_bool("read_only", c.read_only));
  FW_ASSIGN_OR_RETURN(c.restore_file, r.get_string("restore_file", c.restore_file));
  FW_ASSIGN_OR_RETURN(c.lock_file, r.get_string("lock_file", c.lock_file));
  FW_ASSIGN_OR_RETURN(c.trace_dir, r.get_string("trace_dir", c.trace_dir));
  FW_ASSIGN_OR_RETURN(c.trace_rotate_ticks,
                      r.get_int("trace_rotate_ticks", c.trace_rotate_ticks, 10, INT64_MAX));
  FW_ASSIGN_OR_RETURN(int64_t keep, r.get_int("trace_keep", c.trace_keep, 1, 1000));
  c.trace_keep = static_cast<int>(keep);
  if (c.restore_file.empty()) return r["restore_file"].error("must not be empty");
  if (c.lock_file.empty()) return r["lock_file"].error("must not be empty");
  FW_RETURN_IF_ERROR(parse_limiter(r["limiter"], c.limiter));
  FW_RETURN_IF_ERROR(parse_fleet(r["fleet"], c.fleet));
  return parse_server(r["server"], c.server);
}

}  // namespace

Result<AgentConfig> parse_agent_config(const std::string& text, const std::string& name) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::parse(text, name));
  AgentConfig c;
  c.server.unix_socket_path = "/run/flexwatt/agent.sock";
  FW_RETURN_IF_ERROR(parse_root(root, c));
  return c;
}

Result<AgentConfig> load_agent_config(const std::string& path) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::load_file(path));
  AgentConfig c;
  c.server.unix_socket_path = "/run/flexwatt/agent.sock";
  FW_RETURN_IF_ERROR(parse_root(root, c));
  return c;
}

}  // namespace fw::agent
