// AgentServer's admission checks: run when a request's head is in (httplib's pre-routing and
// Expect: 100-continue handlers), before any of its body is read. See docs/agent-api.md
// "Limits".

#include <strings.h>

#include <cstdlib>

#include "agent/server_impl.hpp"

namespace fw::agent {
namespace {

using HandlerResponse = httplib::Server::HandlerResponse;

// A Content-Length value: 1-19 digits, nothing else.
bool parse_length(const std::string& v, uint64_t& out) {
  if (v.empty() || v.size() > 19) return false;
  out = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

}  // namespace

void AgentServer::Impl::compile_routes() {
  routes.clear();
  for (const auto& r : route_table()) {
    Scope scope = r.scope;
    if (std::string_view(r.path) == "/metrics" && !cfg.metrics_require_auth) scope = Scope::kNone;
    routes.push_back({std::regex(route_regex(r)), r.method, scope});
  }
}

HandlerResponse AgentServer::Impl::gate(const httplib::Request& req, httplib::Response& res) {
  ServedConnection* c = current_connection();
  if (c == nullptr || c->gated()) return HandlerResponse::Unhandled;
  c->mark_gated();
  auto refuse = [&](int status, const std::string& message, bool close) {
    send_error(res, status, message);
    if (close) c->close_after();
    return HandlerResponse::Handled;
  };

  // Framing: exactly one way to find the body's end, or no body where none belongs. httplib
  // reads no body for GET/HEAD/OPTIONS (nor for DELETE without Content-Length), so a body
  // there would be parsed as the next requests.
  const size_t n_te = req.get_header_value_count("Transfer-Encoding");
  const size_t n_cl = req.get_header_value_count("Content-Length");
  if (n_te > 1 || n_cl > 1) {
    return refuse(400, "more than one Transfer-Encoding or Content-Length header", true);
  }
  if (n_te == 1 && n_cl == 1) {
    return refuse(400, "both Transfer-Encoding and Content-Length: send one", true);
  }
  uint64_t length = 0;
  if (n_cl == 1 && !parse_length(req.get_header_value("Content-Length"), length)) {
    return refuse(400, "Content-Length is not a decimal byte count", true);
  }
  if (n_te == 1 && ::strcasecmp(req.get_header_value("Transfer-Encoding").c_str(), "chunked")) {
    return refuse(501, "Transfer-Encoding: only chunked is supported", true);
  }
  const bool chunked = n_te == 1;
  const bool has_body = chunked || length > 0;
  const bool body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  if (!body_method && has_body) {
    return refuse(400, "a " + req.method + " request carries no body", true);
  }
  if (body_method && n_te == 0 && n_cl == 0) {
    return refuse(411, "Content-Length (or Transfer-Encoding: chunked) is required", true);
  }

  // Endpoint and method.
  bool path_known = false;
  const CompiledRoute* route = nullptr;
  std::string allow;
  for (const auto& r : routes) {
    if (!std::regex_match(req.path, r.path)) continue;
    path_known = true;
    allow += (allow.empty() ? "" : ", ") + r.method + (r.method == "GET" ? ", HEAD" : "");
    if (r.method == req.method || (r.method == "GET" && req.method == "HEAD")) route = &r;
  }
  if (!path_known) {
    // httplib answers 404 itself; with a body, answer before reading it.
    if (!has_body) return HandlerResponse::Unhandled;
    return refuse(404, "no such endpoint (see GET /v1/discover)", true);
  }
  if (route == nullptr) {
    res.set_header("Allow", allow);
    return refuse(405, req.method + " is not served on " + req.path + " (Allow: " + allow + ")",
                  has_body);
  }

  // Token and scope, before the body: a caller without one costs no body read.
  if (route->scope != Scope::kNone) {
    auto who = principal(req);
    if (!who) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"flexwatt\"");
      return refuse(401, "missing or unknown bearer token", has_body);
    }
    if (static_cast<int>(who->scope) < static_cast<int>(route->scope)) {
      return refuse(403,
                    "token scope '" + std::string(scope_name(who->scope)) + "' is below the '" +
                        std::string(scope_name(route->scope)) + "' this endpoint needs",
                    has_body);
    }
  }

  // Size: a declared length over the limit is refused unread; a chunked body may take twice
  // the limit from the socket (framing included) and is checked again once decoded (guard).
  if (length > cfg.max_body_bytes) {
    return refuse(413, "body larger than " + std::to_string(cfg.max_body_bytes) + " bytes", true);
  }
  if (has_body) c->allow_body(chunked ? 2 * cfg.max_body_bytes + 1024 : length);
  return HandlerResponse::Unhandled;
}

}  // namespace fw::agent
