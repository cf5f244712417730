// GatedServer's admission and answers (net/http_gate.hpp): the routes with their scopes, the
// checks when a request's head is in (httplib's pre-routing and Expect: 100-continue
// handlers) before any of its body is read, and the error answers. See docs/agent-api.md
// "Limits"; the grid endpoint (docs/fleet.md) runs the same checks.

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>

#include "core/format.hpp"
#include "net/http_gate.hpp"

namespace fw::net {
namespace {

using HandlerResponse = httplib::Server::HandlerResponse;

// A Content-Length value: 1-19 digits, nothing else.
bool parse_content_length(const std::string& v, uint64_t& out) {
  if (v.empty() || v.size() > 19) return false;
  out = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

std::string too_large(size_t max_body_bytes) {
  return "body larger than " + std::to_string(max_body_bytes) + " bytes";
}

}  // namespace

std::string_view scope_name(int scope) {
  switch (scope) {
    case kScopeRead:
      return "read";
    case kScopeControl:
      return "control";
    case kScopeAdmin:
      return "admin";
    default:
      return "none";
  }
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}, {"status", status}}.dump(),
                  "application/json");
}

GatedServer& GatedServer::route(std::string_view method, const std::string& pattern, int scope,
                                Handler handler) {
  routes_.push_back({std::string(method), std::regex(pattern), scope});
  const size_t max_body = limits_.max_body_bytes;
  Handler run = [max_body, h = std::move(handler)](const httplib::Request& req,
                                                   httplib::Response& res) {
    // A handler runs once httplib has read the whole body: the connection may be reused.
    if (ServedConnection* c = current_connection()) c->body_complete();
    if (req.body.size() > max_body) return send_error(res, 413, too_large(max_body));  // chunked
    h(req, res);
  };
  if (method == "GET") {
    Get(pattern, std::move(run));
  } else if (method == "PUT") {
    Put(pattern, std::move(run));
  } else if (method == "POST") {
    Post(pattern, std::move(run));
  } else if (method == "PATCH") {
    Patch(pattern, std::move(run));
  } else if (method == "DELETE") {
    Delete(pattern, std::move(run));
  } else {
    std::abort();  // a programming error: no other method is routed
  }
  return *this;
}

void GatedServer::install_hooks() {
  set_payload_max_length(limits_.max_body_bytes);
  // What httplib writes in each answer's Keep-Alive header (the poller enforces both).
  set_keep_alive_timeout(static_cast<time_t>(std::max(1.0, std::ceil(limits_.idle_timeout_s))));
  set_keep_alive_max_count(limits_.keep_alive_max);
  // Admission (framing, method, token, size) before any body byte is read; with
  // "Expect: 100-continue" before the 100 is sent.
  set_pre_routing_handler([this](const auto& req, auto& res) { return admit(req, res); });
  set_expect_100_continue_handler([this](const auto& req, auto& res) {
    return admit(req, res) == HandlerResponse::Handled ? res.status : 100;
  });
  // The server's hook (an audit line) before the answer is written, for every answer, errors
  // included; then settle whether the connection stays open, and say so in the answer.
  set_post_routing_handler([this](const auto& req, auto& res) {
    if (policy_.on_answer) policy_.on_answer(req, res);
    if (ServedConnection* c = current_connection()) c->finish_headers(res);
  });
  set_error_handler([this](const httplib::Request&, httplib::Response& res) {
    ServedConnection* c = current_connection();
    if (c && c->body_over_budget()) {  // httplib says 400 for a failed body read
      res.body.clear();
      res.headers.erase("Content-Type");
      return send_error(res, 413, too_large(limits_.max_body_bytes));
    }
    if (c && c->body_timed_out()) {
      res.body.clear();
      res.headers.erase("Content-Type");
      return send_error(
          res, 408, "request body not received within " + format_g(limits_.body_timeout_s) + " s");
    }
    if (!res.body.empty()) return;  // a handler's own answer
    if (res.status == 413) return send_error(res, 413, too_large(limits_.max_body_bytes));
    if (res.status == 404) return send_error(res, 404, policy_.not_found_message);
    send_error(res, res.status, "request failed");
  });
  set_exception_handler([](const auto&, httplib::Response& res, std::exception_ptr) {
    send_error(res, 500, "internal error");
  });
}

HandlerResponse GatedServer::admit(const httplib::Request& req, httplib::Response& res) {
  ServedConnection* c = current_connection();
  if (c == nullptr) {  // never: every request is served by serve(); refuse rather than pass
    send_error(res, 500, "internal error");
    return HandlerResponse::Handled;
  }
  if (c->gated()) return HandlerResponse::Unhandled;  // checked at its 100-continue
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
  if (n_cl == 1 && !parse_content_length(req.get_header_value("Content-Length"), length)) {
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
  const Route* route = nullptr;
  std::string allow;
  for (const auto& r : routes_) {
    if (!std::regex_match(req.path, r.path)) continue;
    path_known = true;
    allow += (allow.empty() ? "" : ", ") + r.method + (r.method == "GET" ? ", HEAD" : "");
    if (r.method == req.method || (r.method == "GET" && req.method == "HEAD")) route = &r;
  }
  if (!path_known) {
    // httplib answers 404 itself; with a body, answer before reading it.
    if (!has_body) return HandlerResponse::Unhandled;
    return refuse(404, policy_.not_found_message, true);
  }
  if (route == nullptr) {
    res.set_header("Allow", allow);
    return refuse(405, req.method + " is not served on " + req.path + " (Allow: " + allow + ")",
                  has_body);
  }

  // Token and scope, before the body: a caller without one costs no body read.
  if (route->scope != kScopeNone) {
    std::optional<Caller> who;
    if (policy_.authenticate) who = policy_.authenticate(req);
    if (!who) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"flexwatt\"");
      return refuse(401, policy_.unauthorized_message, has_body);
    }
    if (who->scope < route->scope) {
      return refuse(403,
                    "token scope '" + std::string(scope_name(who->scope)) + "' is below the '" +
                        std::string(scope_name(route->scope)) + "' this endpoint needs",
                    has_body);
    }
  }

  // Size: a declared length over the limit is refused unread; a chunked body may take twice
  // the limit from the socket (framing included) and is checked again once decoded (route()).
  const size_t max_body = limits_.max_body_bytes;
  if (length > max_body) return refuse(413, too_large(max_body), true);
  if (has_body) c->allow_body(chunked ? 2 * max_body + 1024 : length);
  return HandlerResponse::Unhandled;
}

}  // namespace fw::net
