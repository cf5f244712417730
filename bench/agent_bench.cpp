// Throughput and latency of the node agent's HTTP API under a bounded loopback load, while
// a stand-in loop publishes a state at 10 Hz (8 GPUs, 4 jobs, tokens on).
//   agent_bench [--clients N] [--seconds S] [--json] [--sim SCENARIO]
//   agent_bench --slowloris N [--seconds S] [--json]
//   (defaults: 8 clients, 2 s per endpoint; --sim: the real NodeAgent loop at 10 Hz on the
//   simulator, its controller, limiter and publishing, instead of the stand-in loop)
// --slowloris N: an attacker without a token holds N idle TCP connections (connected, sending
// nothing) and N trickling ones (a request head sent one byte every 0.5 s), reopening one
// 100 ms after the agent closes it, from 127.0.0.2; meanwhile a prober on 127.0.0.1 sends
// GET /v1/status with a read token on a fresh connection every 50 ms (2 s timeout) for S
// seconds (default 10). Printed: probes answered 200, probes failed (timeout or error), p50/p99/
// max probe latency, and how often the agent closed an attacker's connection.
// For each endpoint (GET /v1/status, GET /metrics, POST /v1/jobs/{id}/progress) N client
// threads send requests back to back over keep-alive TCP connections to 127.0.0.1 for S
// seconds. Printed: requests/s, p50/p99/max latency, errors, and the stand-in loop's
// deadline misses (ticks that published after the next tick was due). Not a test: the
// numbers depend on the machine and on what else runs on it.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/node_agent.hpp"
#include "agent/server.hpp"

namespace {

using namespace fw::agent;
using Clock = std::chrono::steady_clock;
constexpr const char* kToken = "bench-token-0123456789abcdef";

AgentState node_state(int64_t tick) {
  AgentState s;
  s.time_unix_s = 1.8e9 + 0.1 * static_cast<double>(tick);
  s.hostname = "bench-node";
  s.controller = "pid:kp=0.5";
  for (int i = 0; i < 8; ++i) {
    GpuState g;
    g.index = i;
    g.uuid = "GPU-bench-" + std::to_string(i);
    g.name = "NVIDIA H100 80GB HBM3";
    g.power_w = 400 + i;
    g.energy_j = 1e6 + 40.0 * static_cast<double>(tick);
    g.cap_w = 600;
    g.cap_min_w = 200;
    g.cap_max_w = 700;
    g.cap_default_w = 700;
    g.sm_clock_mhz = 1755;
    g.sm_util = 0.95;
    g.mem_util = 0.5;
    g.temp_c = 60;
    s.gpus.push_back(g);
  }
  s.node_power_w = 3228;
  s.budget.schedule = {{0, 4000, 30}};
  s.budget.watts = 4000;
  s.budget.window_s = 30;
  s.windows = {{30, 3200, 0}, {300, 3150, 0}};
  s.limiter_actions_total = {{"clamped", 3}};
  s.loop.period_s = 0.1;
  s.loop.ticks_total = tick;
  for (int j = 0; j < 4; ++j) {
    RegisteredJob js;
    js.id = "job-" + std::to_string(j);
    js.phase = "generate";
    js.tokens_total = 1000.0 * static_cast<double>(tick);
    js.knobs = {64, 8};
    s.jobs.push_back(js);
  }
  return s;
}

struct Result {
  std::string endpoint;
  double seconds = 0;
  size_t requests = 0, errors = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
};

// `path` may hold "{c}", replaced by the client's index (one job per client for progress).
Result load(int port, const std::string& method, const std::string& path_pattern, int clients,
            double seconds) {
  std::vector<std::vector<double>> lat(clients);
  std::atomic<size_t> errors{0};
  auto t0 = Clock::now();
  auto end =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      std::string path = path_pattern;
      if (auto at = path.find("{c}"); at != std::string::npos) {
        path.replace(at, 3, std::to_string(c));
      }
      httplib::Client cli("127.0.0.1", port);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      cli.set_bearer_token_auth(kToken);
      cli.set_read_timeout(5, 0);
      double tokens = 0;
      while (Clock::now() < end) {
        auto a = Clock::now();
        httplib::Result r = method == "GET"
                                ? cli.Get(path.c_str())
                                : cli.Post(path.c_str(),
                                           R"({"tokens_total": )" + std::to_string(tokens += 1) +
                                               R"(, "steps_total": 1})",
                                           "application/json");
        auto b = Clock::now();
        if (!r || r->status >= 400) {
          if (errors++ == 0) {
            std::fprintf(
                stderr, "agent_bench: first error on %s: %s\n", path.c_str(),
                r ? std::to_string(r->status).c_str() : httplib::to_string(r.error()).c_str());
          }
        }
        lat[c].push_back(std::chrono::duration<double, std::milli>(b - a).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  Result res;
  res.endpoint = method + " " + path_pattern;
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  res.requests = all.size();
  res.errors = errors;
  if (!all.empty()) {
    res.p50_ms = all[all.size() / 2];
    res.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    res.max_ms = all.back();
  }
  return res;
}

int connect_from(const char* src_ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, src_ip, &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct SlowlorisResult {
  size_t probes = 0, ok = 0, failed = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  size_t attacker_closed = 0;  // attacker connections the agent closed (408, 503 or idle)
};

// N idle + N trickling connections from 127.0.0.2 while a prober on 127.0.0.1 polls
// /v1/status for `seconds` (see the file comment).
SlowlorisResult slowloris(int port, int n, double seconds) {
  SlowlorisResult res;
  std::atomic<bool> done{false};
  std::atomic<size_t> closed{0};
  std::thread attacker([&] {
    const std::string head =
        "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(4096, 'a') + "\r\n\r\n";
    struct Conn {
      int fd = -1;
      bool trickle = false;
      size_t sent = 0;
      Clock::time_point retry_at{};  // a dropped connection is reopened 100 ms later
    };
    std::vector<Conn> conns(static_cast<size_t>(2 * n));
    for (size_t i = 0; i < conns.size(); ++i) conns[i].trickle = i % 2 == 1;
    auto next_byte = Clock::now();
    while (!done) {
      for (auto& c : conns) {
        if (c.fd < 0 && Clock::now() >= c.retry_at) {
          c.fd = connect_from("127.0.0.2", port);
          c.sent = 0;
        }
      }
      std::vector<pollfd> fds;
      for (auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 50);
      for (size_t i = 0; i < conns.size(); ++i) {
        if (conns[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          // An answer (408, 503) or EOF: the agent dropped this connection; reconnect.
          ::close(conns[i].fd);
          conns[i].fd = -1;
          conns[i].retry_at = Clock::now() + std::chrono::milliseconds(100);
          ++closed;
        }
      }
      if (Clock::now() >= next_byte) {
        next_byte = Clock::now() + std::chrono::milliseconds(500);
        for (auto& c : conns) {
          if (c.fd < 0 || !c.trickle || c.sent >= head.size()) continue;
          if (::send(c.fd, head.data() + c.sent, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++c.sent;
        }
      }
    }
    for (auto& c : conns) {
      if (c.fd >= 0) ::close(c.fd);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the attacker settle
  std::vector<double> lat;
  auto end = Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_keep_alive(false);
    cli.set_connection_timeout(2, 0);
    cli.set_read_timeout(2, 0);
    cli.set_write_timeout(2, 0);
    cli.set_bearer_token_auth(kToken);
    auto a = Clock::now();
    auto r = cli.Get("/v1/status");
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    ++res.probes;
    if (r && r->status == 200) {
      ++res.ok;
    } else {
      ++res.failed;
    }
    lat.push_back(ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  done = true;
  attacker.join();
  std::sort(lat.begin(), lat.end());
  if (!lat.empty()) {
    res.p50_ms = lat[lat.size() / 2];
    res.p99_ms = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
    res.max_ms = lat.back();
  }
  res.attacker_closed = closed;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 8;
  double seconds = 2;
  bool as_json = false;
  std::string sim;
  int slow_n = 0;
  int worker_nice = ServerConfig{}.worker_nice;
  int loop_priority = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--clients") && i + 1 < argc)
      clients = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--json"))
      as_json = true;
    else if (!std::strcmp(argv[i], "--sim") && i + 1 < argc)
      sim = argv[++i];
    else if (!std::strcmp(argv[i], "--slowloris") && i + 1 < argc)
      slow_n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--worker-nice") && i + 1 < argc)
      worker_nice = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--loop-priority") && i + 1 < argc)
      loop_priority = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: agent_bench [--clients N] [--seconds S] [--json] [--sim SCENARIO] "
                   "[--worker-nice N] [--loop-priority P] | --slowloris N [--seconds S]\n");
      return 2;
    }
  }
  if (clients < 1 || clients > 256 || seconds <= 0 || seconds > 600) {
    std::fprintf(stderr, "agent_bench: --clients in [1, 256], --seconds in (0, 600]\n");
    return 2;
  }
  auto dir =
      std::filesystem::temp_directory_path() / ("fw_agent_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokens") << "bench control " << kToken << "\n";
  std::filesystem::permissions(
      dir / "tokens", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  if (slow_n > 0) {
    if (slow_n > 1000) {
      std::fprintf(stderr, "agent_bench: --slowloris in [1, 1000]\n");
      return 2;
    }
    StateHub hub;
    CommandQueue commands;
    JobRegistry jobs;
    hub.publish(node_state(0));
    ServerConfig cfg;  // the deployment's defaults (threads, limits)
    cfg.tcp_port = 0;
    cfg.token_file = (dir / "tokens").string();
    AgentServer server(cfg, hub, commands, jobs);
    if (auto st = server.start(); !st.ok()) {
      std::fprintf(stderr, "agent_bench: %s\n", st.message().c_str());
      return 1;
    }
    double secs = seconds == 2 ? 10 : seconds;
    SlowlorisResult r = slowloris(server.tcp_port(), slow_n, secs);
    server.stop();
    std::filesystem::remove_all(dir);
    nlohmann::json j = {{"idle_connections", slow_n},
                        {"trickling_connections", slow_n},
                        {"seconds", secs},
                        {"probes", r.probes},
                        {"probes_ok", r.ok},
                        {"probes_failed", r.failed},
                        {"probe_p50_ms", r.p50_ms},
                        {"probe_p99_ms", r.p99_ms},
                        {"probe_max_ms", r.max_ms},
                        {"attacker_connections_closed", r.attacker_closed}};
    if (as_json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf(
          "agent_bench --slowloris: %d idle + %d trickling connections (no token, from "
          "127.0.0.2), %.0f s, %u cores\n"
          "  /v1/status probes: %zu, ok %zu, failed %zu; p50 %.1f ms, p99 %.1f ms, max %.1f ms\n"
          "  attacker connections closed by the agent: %zu\n",
          slow_n, slow_n, secs, std::thread::hardware_concurrency(), r.probes, r.ok, r.failed,
          r.p50_ms, r.p99_ms, r.max_ms, r.attacker_closed);
    }
    return 0;
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ticks{0}, misses{0};
  int64_t late = 0, skipped = 0;  // NodeAgent loop: ticks taken > 25 % of a period late; skipped
  double max_late_s = 0;
  std::vector<Result> results;
  auto run_load = [&](int port) {
    results.push_back(load(port, "GET", "/v1/status", clients, seconds));
    results.push_back(load(port, "GET", "/metrics", clients, seconds));
    results.push_back(load(port, "POST", "/v1/jobs/job-{c}/progress", clients, seconds));
  };
  if (!sim.empty()) {
    // The real loop: NodeAgent on the simulator at 10 Hz, serving the same API.
    fw::agent::AgentConfig acfg;
    acfg.plant.backend = "sim:" + sim;
    acfg.period_s = 0.1;
    acfg.controller = "pid:knob=gen_concurrency";
    acfg.job_silent_after_s = 0;
    acfg.restore_file = (dir / "saved.json").string();
    acfg.lock_file = (dir / "agent.lock").string();
    acfg.server.unix_socket_path = (dir / "agent.sock").string();
    acfg.server.tcp_port = 0;
    acfg.server.token_file = (dir / "tokens").string();
    acfg.server.threads = clients + 8;
    acfg.server.max_connections_per_client = clients + 8;
    acfg.server.worker_nice = worker_nice;
    acfg.loop_priority = loop_priority;
    fw::agent::NodeAgent agent(acfg);
    if (auto st = agent.start(); !st.ok()) {
      std::fprintf(stderr, "agent_bench: %s\n", st.message().c_str());
      return 1;
    }
    for (int c = 0; c < clients; ++c) agent.jobs().add("job-" + std::to_string(c), {});
    fw::agent::AgentRunSummary sum;
    std::thread loop([&] {
      fw::SteadyClock clock;
      sum = agent.run(clock, [&] { return stop.load(); });
    });
    run_load(agent.tcp_port());
    stop = true;
    loop.join();
    (void)agent.shutdown();
    ticks = sum.ticks;
    // One stall usually shows twice: its tick taken late, and the next deadline skipped.
    misses = sum.missed_ticks + sum.late_ticks;
    late = sum.late_ticks;
    skipped = sum.missed_ticks;
    max_late_s = sum.max_lateness_s;
  } else {
    StateHub hub;
    CommandQueue commands;
    JobRegistry jobs(256);
    for (int c = 0; c < clients; ++c) jobs.add("job-" + std::to_string(c), {});
    ServerConfig cfg;
    cfg.tcp_port = 0;
    cfg.token_file = (dir / "tokens").string();
    cfg.threads = clients + 8;
    cfg.worker_nice = worker_nice;
    cfg.max_connections_per_client = clients + 8;  // every client is 127.0.0.1
    AgentServer server(cfg, hub, commands, jobs);
    if (auto st = server.start(); !st.ok()) {
      std::fprintf(stderr, "agent_bench: %s\n", st.message().c_str());
      return 1;
    }
    // Stand-in loop at 10 Hz: publish, count ticks that finished after the next deadline.
    std::thread loop([&] {
      auto next = Clock::now();
      const auto period = std::chrono::milliseconds(100);
      while (!stop) {
        int64_t t = ticks++;
        hub.publish(node_state(t));
        next += period;
        if (Clock::now() > next) ++misses;
        std::this_thread::sleep_until(next);
      }
    });
    run_load(server.tcp_port());
    stop = true;
    loop.join();
    server.stop();
  }
  std::filesystem::remove_all(dir);

  nlohmann::json out = nlohmann::json::array();
  if (!as_json) {
    std::printf(
        "agent_bench: %d clients, %.1f s per endpoint, loopback TCP, bearer auth, "
        "%u cores\n",
        clients, seconds, std::thread::hardware_concurrency());
    std::printf("%-34s %10s %9s %9s %9s %7s\n", "endpoint", "req/s", "p50 ms", "p99 ms", "max ms",
                "errors");
  }
  for (const auto& r : results) {
    double rps = static_cast<double>(r.requests) / r.seconds;
    if (as_json) {
      out.push_back({{"endpoint", r.endpoint},
                     {"requests_per_s", rps},
                     {"p50_ms", r.p50_ms},
                     {"p99_ms", r.p99_ms},
                     {"max_ms", r.max_ms},
                     {"errors", r.errors}});
    } else {
      std::printf("%-34s %10.0f %9.3f %9.3f %9.3f %7zu\n", r.endpoint.c_str(), rps, r.p50_ms,
                  r.p99_ms, r.max_ms, r.errors);
    }
  }
  if (as_json) {
    std::printf("%s\n", nlohmann::json{{"clients", clients},
                                       {"seconds", seconds},
                                       {"loop", sim.empty() ? "stand-in" : "NodeAgent on sim"},
                                       {"loop_ticks", ticks.load()},
                                       {"loop_deadline_misses", misses.load()},
                                       {"loop_late_ticks", late},
                                       {"loop_skipped_ticks", skipped},
                                       {"loop_max_lateness_ms", 1e3 * max_late_s},
                                       {"worker_nice", worker_nice},
                                       {"loop_priority", loop_priority},
                                       {"endpoints", out}}
                            .dump(2)
                            .c_str());
  } else {
    std::printf("%s at 10 Hz: %lld ticks, %lld deadline misses (late or skipped)\n",
                sim.empty() ? "stand-in loop" : "NodeAgent loop on sim",
                static_cast<long long>(ticks.load()), static_cast<long long>(misses.load()));
    if (!sim.empty()) {
      std::printf(
          "  %lld taken > 25 %% of a period late, %lld skipped, max lateness %.1f ms; "
          "HTTP workers at nice %d; loop priority %d\n",
          static_cast<long long>(late), static_cast<long long>(skipped), 1e3 * max_late_s,
          worker_nice, loop_priority);
    }
  }
  return 0;
}
