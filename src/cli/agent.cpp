// `flexwatt agent`: the node daemon (docs/agent.md). Flags → AgentConfig → agent::NodeAgent.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/agent_config.hpp"
#include "agent/node_agent.hpp"
#include "cli/verb.hpp"
#include "runtime/clock.hpp"
#include "runtime/fatal_restore.hpp"
#include "runtime/stop_signals.hpp"

namespace fw::cli {
namespace {

int run_agent(int argc, char** argv) {
  CLI::App app(
      "Run the node agent: measure every GPU, run a controller through the SafetyLimiter on a "
      "real-time loop, serve the HTTP API, /metrics and the dashboard, and put the power caps "
      "found at start back on exit, on SIGTERM, SIGINT and every other signal that would end "
      "it (SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, ...), after a fatal signal (SIGABRT, SIGSEGV, "
      "...: a restore process takes over) and after a crash (--restore, or the next "
      "start).\n\nExamples:\n"
      "  flexwatt agent --config deploy/agent-sim.yaml\n"
      "  flexwatt agent --config /etc/flexwatt/agent.yaml --restore   # systemd ExecStopPost=\n"
      "  flexwatt agent --config /etc/flexwatt/agent.yaml --restore --to-default  # corrupt file",
      "agent");
  std::string config;
  bool restore = false, json = false, to_default = false;
  double lock_wait_s = 0;
  std::string backend;
  double duration_s = -1;
  app.add_option("--config", config, "agent.yaml (docs/agent.md lists every key)")->required();
  app.add_flag("--restore", restore,
               "put back the caps saved in the restore file (after a crash) and exit");
  app.add_flag("--to-default", to_default,
               "with --restore: ignore the restore file (a corrupt one too), set every managed "
               "GPU to the driver's default power limit and remove the file");
  app.add_option("--lock-wait-s", lock_wait_s,
                 "with --restore: wait up to this long for the node lock (default 0)")
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--backend", backend, "override the config's backend (nvml, fake-nvml, sim:PATH)");
  app.add_option("--duration-s", duration_s,
                 "stop after this many seconds (default: run until "
                 "SIGTERM/SIGINT)");
  app.add_flag("--json", json, "print the run summary as JSON on stdout at exit");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto loaded = agent::load_agent_config(config);
  if (!loaded.ok()) return fail("agent", loaded.status());
  agent::AgentConfig cfg = std::move(loaded).value();
  if (!backend.empty()) cfg.plant.backend = backend;
  if (duration_s >= 0) cfg.duration_s = duration_s;

  if ((to_default || lock_wait_s > 0) && !restore) {
    std::fprintf(stderr, "flexwatt agent: --to-default and --lock-wait-s need --restore\n");
    return 2;
  }
  if (restore) {
    // A restore is not interrupted by the signals that stop an agent (systemd's stop, a closed
    // terminal): it is what those exits need to finish.
    for (int sig : StopSignals::signals()) std::signal(sig, SIG_IGN);
    std::string what;
    Status s = agent::restore_from_file(cfg, &what, {to_default, lock_wait_s});
    if (!s.ok()) return fail("agent", s);
    if (json) {
      std::printf("%s\n", nlohmann::json{{"restore", what}}.dump().c_str());
    } else {
      std::fprintf(stderr, "flexwatt agent: %s\n", what.c_str());
    }
    return 0;
  }

  agent::AgentRunSummary sum;
  Status stopped;
  {
    StopSignals signals;  // SIGTERM, SIGINT, ... end the loop; the caps are restored below
    agent::NodeAgent node(cfg);
    Status s = node.start();
    if (!s.ok()) {
      stopped = node.shutdown();  // puts back anything saved before the failure
      return fail("agent", s);
    }
    // From here a fatal signal hands the restore to a fresh process (this command line with
    // --restore, waiting for the node lock this one holds until it dies).
    // argv is the verb's own ("agent", flags...): the program name comes first.
    std::vector<std::string> restore_cmd = {"flexwatt"};
    restore_cmd.insert(restore_cmd.end(), argv, argv + argc);
    for (const char* a : {"--restore", "--lock-wait-s", "10"}) restore_cmd.emplace_back(a);
    FatalRestore::install(restore_cmd);
    std::fprintf(stderr, "flexwatt agent: running on %s (tcp port %d), period %g s\n",
                 cfg.plant.backend.c_str(), node.tcp_port(), cfg.period_s);
    SteadyClock clock;
    sum = node.run(clock, &StopSignals::requested);
    if (int sig = StopSignals::signal_number(); sig != 0) {
      std::fprintf(stderr, "flexwatt agent: stopping on signal %d (%s)\n", sig, strsignal(sig));
    }
    stopped = node.shutdown();
    FatalRestore::uninstall();
  }
  if (json) {
    nlohmann::json j = {{"ticks", sum.ticks},
                        {"late_ticks", sum.late_ticks},
                        {"missed_ticks", sum.missed_ticks},
                        {"caught_up_ticks", sum.caught_up_ticks},
                        {"max_lateness_s", sum.max_lateness_s},
                        {"fallbacks", sum.fallbacks},
                        {"write_failures", sum.write_failures}};
    // read_only wrote nothing, so nothing was restored: say so instead of "restored".
    if (cfg.read_only) {
      j["read_only"] = true;
    } else {
      j["restored"] = stopped.ok();
    }
    std::printf("%s\n", j.dump().c_str());
  }
  if (!stopped.ok()) return 1;  // shutdown() already said why (the restore file is kept)
  return 0;
}

}  // namespace

FW_VERB("agent", "run the node agent (control loop, HTTP API, metrics, restore on exit)",
        run_agent);

}  // namespace fw::cli
