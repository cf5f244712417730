#pragma once
// Private to server*.cpp: the state behind AgentServer, shared by the lifecycle code
// (server.cpp) and the request handlers (server_routes.cpp).

#include <httplib.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/api_requests.hpp"
#include "agent/audit_log.hpp"
#include "agent/auth.hpp"
#include "agent/server.hpp"
#include "core/format.hpp"
#include "net/http_gate.hpp"

namespace fw::agent {

// One endpoint: /v1/discover lists the table; install_routes registers each row with the
// gate (net::GatedServer::route), which checks its method and scope before a body is read.
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
  std::vector<std::unique_ptr<net::GatedServer>> servers;
  std::atomic<bool> stopping{false};
  std::atomic<int> waiters{0};
  std::atomic<uint64_t> next_job{1};
  int bound_tcp_port = -1;
  bool unix_bound = false;  // this server created the socket file (stop() removes it)

  // AgentServer::start()'s work; on failure the caller runs undo_start().
  Status start();
  void undo_start();

  using Handler =
      std::function<void(const httplib::Request&, httplib::Response&, const Principal&)>;
  // A handler that hands `fn` its caller: the gate admitted the request for `need` before its
  // body was read; checked again here (401/403), Principal{} for Scope::kNone.
  net::GatedServer::Handler guard(Scope need, Handler fn);
  // Who sent the request: the token's principal, anonymous admin without auth, or nullopt.
  std::optional<Principal> principal(const httplib::Request& req) const;
  void audit_request(const httplib::Request& req, const httplib::Response& res);
  // Registers every row of route_table() with its handler and scope (/metrics' per config).
  void install_routes(net::GatedServer& s);
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
