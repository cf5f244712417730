#pragma once
// StatePublisher: the HTTP-facing side of the node agent's state, one job: what the HTTP
// threads may read of the loop, handed over whole.
//   publish(): once per tick (and once at start), from the loop thread: an AgentState built from
//     the plant (GPU identities, cap ranges, throttle reasons), the tick (snapshot, budget in
//     force, windows, limiter counters, fallbacks, the last applied command), the driver's
//     timing and the job registry, then StateHub::publish(). Each registered job's progress is
//     the plant's reading of the job it mirrors (the client's report on hardware, the simulated
//     job's on sim), so throughput follows the caps on both;
//   set_env() / env(): the plant's info and budget in force, copied by the loop at each
//     episode start, read by HTTP threads to validate PUT /v1/controller (mutex-guarded copy).

#include <mutex>
#include <string>
#include <utility>

#include "agent/agent_state.hpp"
#include "agent/agent_tick.hpp"
#include "agent/job_registry.hpp"
#include "agent/state_hub.hpp"
#include "runtime/node_plant.hpp"

namespace fw::agent {

class StatePublisher {
 public:
  StatePublisher(StateHub& hub, JobRegistry& jobs, std::string hostname, std::string backend,
                 bool read_only)
      : hub_(hub),
        jobs_(jobs),
        hostname_(std::move(hostname)),
        backend_(std::move(backend)),
        read_only_(read_only) {}

  // `tick` null before the loop exists (a start that failed half-way): GPUs only.
  void publish(double t, NodePlant& plant, const AgentTick* tick, const LoopState& loop);
  void set_env(const PlantInfo& info, const BudgetSchedule& budget);
  std::pair<PlantInfo, BudgetSchedule> env() const;

 private:
  StateHub& hub_;
  JobRegistry& jobs_;
  std::string hostname_;
  std::string backend_;
  bool read_only_;
  mutable std::mutex env_mu_;
  PlantInfo env_info_;
  BudgetSchedule env_budget_;
};

}  // namespace fw::agent
