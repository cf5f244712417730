#include "fleet/coordinator_config.hpp"

#include <charconv>

#include "core/config.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/etcd_security_config.hpp"
#include "fleet/grid.hpp"

namespace fw::fleet {

Result<CoordinatorConfig> load_coordinator_config(const std::string& path) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::load_file(path));
  if (!root.is_map()) return root.error("not a map");
  FW_RETURN_IF_ERROR(root.reject_unknown({"site",
                                          "id",
                                          "etcd",
                                          "allocator",
                                          "budget_w",
                                          "lease_ttl_s",
                                          "campaign_timeout_s",
                                          "expiry_s",
                                          "refresh_s",
                                          "listen",
                                          "grid_ramp_w_per_s",
                                          "token_file",
                                          "allow_unauthenticated_writes",
                                          "audit_log",
                                          "etcd_tls",
                                          "etcd_auth",
                                          "site_loop",
                                          "openadr",
                                          "start_ramp_w_per_s",
                                          "stop_ramp_w_per_s"}));
  CoordinatorConfig c;
  CoordinatorOptions& o = c.options;
  for (const char* k : {"site", "id", "etcd"}) {
    if (!root.has(k)) return root.error(std::string(k) + ": missing");
  }
  FW_ASSIGN_OR_RETURN(o.site, root["site"].as_string());
  if (Status s = check_name("site", o.site); !s.ok()) return root["site"].error(s.message());
  FW_ASSIGN_OR_RETURN(o.id, root["id"].as_string());
  if (o.id.empty()) return root["id"].error("must not be empty");
  const ConfigNode etcd = root["etcd"];
  if (!etcd.is_sequence() || etcd.size() == 0) return etcd.error("a non-empty list of URLs");
  for (size_t i = 0; i < etcd.size(); ++i) {
    FW_ASSIGN_OR_RETURN(std::string url, etcd.at(i).as_string());
    if (auto e = parse_endpoint(url); !e.ok()) return etcd.at(i).error(e.status().message());
    c.etcd.push_back(url);
  }
  FW_ASSIGN_OR_RETURN(c.etcd_security, parse_etcd_security(root, c.etcd));
  FW_ASSIGN_OR_RETURN(o.allocator, root.get_string("allocator", "equal"));
  if (auto a = make_allocator(o.allocator); !a.ok()) {
    return root["allocator"].error(a.status().message());
  }
  FW_ASSIGN_OR_RETURN(o.default_budget_w, root.get_double("budget_w", 0, 0));
  FW_ASSIGN_OR_RETURN(o.lease_ttl_s, root.get_double("lease_ttl_s", 3, 2, 3600));
  FW_ASSIGN_OR_RETURN(o.campaign_timeout_s, root.get_double("campaign_timeout_s", 1, 0.1, 60));
  FW_ASSIGN_OR_RETURN(o.expiry_s, root.get_double("expiry_s", 10, 1, 600));
  FW_ASSIGN_OR_RETURN(o.refresh_s, root.get_double("refresh_s", 2, 0.1, 43200));
  if (o.refresh_s * 2 > o.expiry_s) return root["refresh_s"].error("must be <= expiry_s / 2");
  FW_ASSIGN_OR_RETURN(c.grid_ramp_w_per_s, root.get_double("grid_ramp_w_per_s", 0, 0));
  if (auto r = check_ramp_w_per_s(c.grid_ramp_w_per_s, "grid_ramp_w_per_s"); !r.ok()) {
    return root["grid_ramp_w_per_s"].error(r.status().message());
  }
  FW_ASSIGN_OR_RETURN(o.start_ramp_w_per_s, root.get_double("start_ramp_w_per_s", 0, 0, 1e9));
  FW_ASSIGN_OR_RETURN(o.stop_ramp_w_per_s, root.get_double("stop_ramp_w_per_s", 0, 0, 1e9));
  FW_ASSIGN_OR_RETURN(c.token_file, root.get_string("token_file", ""));
  FW_ASSIGN_OR_RETURN(c.allow_unauthenticated_writes,
                      root.get_bool("allow_unauthenticated_writes", false));
  FW_ASSIGN_OR_RETURN(c.audit_log, root.get_string("audit_log", ""));
  if (root.has("site_loop")) {
    const ConfigNode l = root["site_loop"];
    if (!l.is_map()) return l.error("not a map");
    FW_RETURN_IF_ERROR(l.reject_unknown({"enabled", "period_s", "ki_per_s", "z", "pause_stagger_s",
                                         "reclaim", "tier_window", "resume_s"}));
    SiteLoopOptions& so = o.site_loop;
    FW_ASSIGN_OR_RETURN(so.enabled, l.get_bool("enabled", false));
    FW_ASSIGN_OR_RETURN(so.period_s, l.get_double("period_s", 1, 0.05, 60));
    FW_ASSIGN_OR_RETURN(so.ki_per_s, l.get_double("ki_per_s", SiteLoopOptions{}.ki_per_s, 0, 10));
    FW_ASSIGN_OR_RETURN(so.z, l.get_double("z", 2, 0, 10));
    // Pausing (split_plan.hpp) and idle reclaim while the loop tracks: operator choices.
    FW_ASSIGN_OR_RETURN(o.pause_stagger_s, l.get_double("pause_stagger_s", 0, 0, 3600));
    FW_ASSIGN_OR_RETURN(o.site_loop_reclaim, l.get_bool("reclaim", false));
    // The span tiers are judged over (unix s; absent: per event), e.g. the billing day.
    if (l.has("tier_window")) {
      const ConfigNode w = l["tier_window"];
      if (!w.is_map()) return w.error("not a map");
      FW_RETURN_IF_ERROR(w.reject_unknown({"start_unix_s", "end_unix_s"}));
      for (const char* k : {"start_unix_s", "end_unix_s"}) {
        if (!w.has(k)) return w.error(std::string(k) + ": missing");
      }
      FW_ASSIGN_OR_RETURN(o.tier_window.start_unix_s, w.get_double("start_unix_s", 0, 0, 1e10));
      FW_ASSIGN_OR_RETURN(o.tier_window.end_unix_s, w.get_double("end_unix_s", 0, 0, 1e10));
      if (!(o.tier_window.end_unix_s > o.tier_window.start_unix_s)) {
        return w["end_unix_s"].error("must be after start_unix_s");
      }
    }
    FW_ASSIGN_OR_RETURN(o.resume_s, l.get_double("resume_s", 0, 0, 3600));
  }
  if (root.has("openadr")) {
    const ConfigNode a = root["openadr"];
    if (!a.is_map()) return a.error("not a map");
    FW_RETURN_IF_ERROR(
        a.reject_unknown({"vtn_url", "token_file", "program_id", "ven_name", "poll_s",
                          "retry_min_s", "retry_max_s", "callback_listen", "callback_url"}));
    if (!a.has("vtn_url")) return a.error("vtn_url: missing");
    c.openadr = true;
    FW_ASSIGN_OR_RETURN(c.ven.vtn_url, a["vtn_url"].as_string());
    if (auto v = OpenAdrVen::Create(c.ven); !v.ok()) {
      return a["vtn_url"].error(v.status().message());
    }
    FW_ASSIGN_OR_RETURN(c.ven_token_file, a.get_string("token_file", ""));
    FW_ASSIGN_OR_RETURN(c.ven.program_id, a.get_string("program_id", ""));
    FW_ASSIGN_OR_RETURN(c.ven.ven_name, a.get_string("ven_name", "flexwatt"));
    FW_ASSIGN_OR_RETURN(c.ven_poll_s, a.get_double("poll_s", 30, 1, 3600));
    OpenAdrLinkOptions& l = c.ven_link;
    l.poll_s = c.ven_poll_s;
    l.resource_name = o.site;
    FW_ASSIGN_OR_RETURN(l.retry_min_s, a.get_double("retry_min_s", 1, 0.1, 3600));
    FW_ASSIGN_OR_RETURN(l.retry_max_s, a.get_double("retry_max_s", 300, l.retry_min_s, 86400));
    FW_ASSIGN_OR_RETURN(std::string cb, a.get_string("callback_listen", "127.0.0.1:0"));
    const size_t colon = cb.rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon > 0) {
      auto [end, ec] = std::from_chars(cb.data() + colon + 1, cb.data() + cb.size(), port);
      if (ec != std::errc() || end != cb.data() + cb.size()) port = -1;
    }
    if (port < 0 || port > 65535) {
      return a["callback_listen"].error("'" + cb + "': expected host:port (port 0: any)");
    }
    l.callback_host = cb.substr(0, colon);
    if (l.callback_host.size() > 2 && l.callback_host.front() == '[')
      l.callback_host = l.callback_host.substr(1, l.callback_host.size() - 2);
    l.callback_port = port;
    FW_ASSIGN_OR_RETURN(l.callback_url, a.get_string("callback_url", ""));
    if (!l.callback_url.empty() && l.callback_url.rfind("http://", 0) != 0 &&
        l.callback_url.rfind("https://", 0) != 0) {
      return a["callback_url"].error("'" + l.callback_url + "' is not an http(s):// URL");
    }
    if (l.callback_url.empty() && (l.callback_host == "0.0.0.0" || l.callback_host == "::")) {
      return a["callback_listen"].error(l.callback_host +
                                        " is every address: set callback_url, the URL the VTN "
                                        "reaches");
    }
  }
  FW_ASSIGN_OR_RETURN(std::string listen, root.get_string("listen", ""));
  if (!listen.empty()) {
    auto e = parse_endpoint(listen);
    if (!e.ok()) return root["listen"].error(e.status().message());
    c.listen_host = e->host;
    c.listen_port = e->port;
    const bool loopback =
        e->host == "localhost" || e->host == "::1" || e->host.rfind("127.", 0) == 0;
    if (!loopback && c.token_file.empty()) {
      return root["listen"].error(e->host +
                                  " is not loopback: a non-loopback address needs token_file");
    }
    if (!loopback && c.allow_unauthenticated_writes) {
      return root["allow_unauthenticated_writes"].error("only on a loopback listen address");
    }
  }
  c.ven.ramp_w_per_s = c.grid_ramp_w_per_s;
  return c;
}

}  // namespace fw::fleet
