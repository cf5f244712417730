#pragma once
// Private to server*.cpp: the state behind AgentServer, shared by the lifecycle code
// (server.cpp) and the request handlers (server_routes.cpp).

#include <httplib.h>

#include <atomic>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "agent/api_requests.hpp"
#include "agent/audit_log.hpp"
#include "agent/auth.hpp"
#include "agent/http_gate.hpp"
#include "agent/server.hpp"
#include "core/format.hpp"

namespace fw::agent {

// One endpoint: /v1/discover lists the table, the gate (server_gate.cpp) checks methods and
// scopes against it before a body is read, install_routes binds the handlers.
struct RouteSpec {
  const char* method;
  const char* path;  // "{id}" stands for a job id
  Scope scope;
};
const std::vector<RouteSpec>& route_table();  // server_routes.cpp
std::string route_regex(const RouteSpec& r);  // the path as a regex, {id} as the id pattern

struct AgentServer::Impl {
  Impl(ServerConfig c, StateHub& h, CommandQueue& q, JobRegistry& j)
      : cfg(std::move(c)), hub(h), commands(q), jobs(j) {}

  ServerConfig cfg;
  StateHub& hub;
  CommandQueue& commands;
  JobRegistry& jobs;
  std::function<Status(const std::string&)> validate_controller;
  std::optional<TokenStore> tokens;  // nullopt: authentication off
  AuditLog audit;
  std::vector<std::unique_ptr<GatedServer>> servers;
  std::atomic<bool> stopping{false};
  struct CompiledRoute {
    std::regex path;
    std::string method;
    Scope scope;
  };
  std::vector<CompiledRoute> routes;  // route_table() compiled, /metrics' scope per config
  std::atomic<int> waiters{0};
  std::atomic<uint64_t> next_job{1};
  int bound_tcp_port = -1;
  bool unix_bound = false;  // this server created the socket file (stop() removes it)

  // AgentServer::start()'s work; on failure the caller runs undo_start().
  Status start();
  void undo_start();

  using Handler =
      std::function<void(const httplib::Request&, httplib::Response&, const Principal&)>;
  // A handler that first authenticates and checks `need` (401/403 otherwise).
  httplib::Server::Handler guard(Scope need, Handler fn);
  // Who sent the request: the token's principal, anonymous admin without auth, or nullopt.
  std::optional<Principal> principal(const httplib::Request& req) const;
  void audit_request(const httplib::Request& req, const httplib::Response& res);
  void install_routes(httplib::Server& s);
  void compile_routes();
  // Admission checks when a request's head is in, before its body is read (server_gate.cpp):
  // framing (400/411/501), method (405 + Allow), token and scope (401/403), size (413).
  // Handled: answered (with "close" where a body is left unread); Unhandled: the body may
  // be read, within the budget it set.
  httplib::Server::HandlerResponse gate(const httplib::Request& req, httplib::Response& res);
  // Takes a slot for a stream or long-poll; false (answer 503) when all are taken.
  bool take_waiter();
  void release_waiter() { --waiters; }
  bool cancelled() const { return stopping.load(); }

  // Handlers (server_routes.cpp).
  void discover(const httplib::Request& req, httplib::Response& res);
  void status(httplib::Response& res);
  void stream(const httplib::Request& req, httplib::Response& res);
  void history(const httplib::Request& req, httplib::Response& res);
  void metrics(httplib::Response& res);
  void put_budget(const httplib::Request& req, httplib::Response& res, const Principal& who);
  void put_controller(const httplib::Request& req, httplib::Response& res, const Principal& who);
  void post_job(const httplib::Request& req, httplib::Response& res);
  void post_progress(const httplib::Request& req, httplib::Response& res);
  void get_knobs(const httplib::Request& req, httplib::Response& res);
  void delete_job(const httplib::Request& req, httplib::Response& res);
  void put_pfi(const httplib::Request& req, httplib::Response& res);
  void list_jobs(httplib::Response& res);
  // Queues a budget/controller command: 202, or 409 (stale expected version) / 503 (full).
  void submit(AgentCommand cmd, std::optional<uint64_t> expected, httplib::Response& res);
};

// Writes {"error": message, "status": code} with that HTTP status.
void send_error(httplib::Response& res, int status, const std::string& message);
void send_json(httplib::Response& res, int status, const std::string& body);

}  // namespace fw::agent
