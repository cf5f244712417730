#pragma once
// A two-GPU, one-job AgentState for the agent's tests (fixed values, no clock).

#include "agent/agent_state.hpp"

namespace fw::agent::testing {

inline AgentState sample_state() {
  AgentState s;
  s.time_unix_s = 1.8e9;
  s.hostname = "node-7";
  s.controller = "pid:kp=0.5";
  for (int i = 0; i < 2; ++i) {
    GpuState g;
    g.index = i;
    g.uuid = "GPU-0000000" + std::to_string(i);
    g.name = "NVIDIA H100 80GB HBM3";
    g.power_w = 300 + 10 * i;
    g.energy_j = 1.5e6;
    g.cap_w = 500;
    g.cap_min_w = 200;
    g.cap_max_w = 700;
    g.cap_default_w = 700;
    g.sm_clock_mhz = 1755;
    g.sm_util = 0.9;
    g.mem_util = 0.4;
    g.temp_c = 61;
    s.gpus.push_back(g);
  }
  s.node_power_w = 610;
  s.budget.schedule = {{0, 650, 30}};
  s.budget.watts = 650;
  s.budget.window_s = 30;
  s.windows = {{30, 600.5, 2}, {300, 590, 0}};
  s.limiter_actions_total = {{"clamped", 4}, {"slew_limited", 1}};
  s.fallbacks_total = {{"stale_telemetry", 1}};
  s.loop = {0.1, 1000, 3, 0.002, 0.03};
  RegisteredJob j;
  j.id = "grpo-1";
  j.name = "grpo \"7b\"";
  j.kind = "grpo";
  j.phase = "generate";
  j.tokens_total = 123456;
  j.steps_total = 12;
  j.knobs = {32, kUnset};
  j.knob_version = 2;
  j.last_report_age_s = 0.5;
  s.jobs.push_back(j);
  return s;
}

}  // namespace fw::agent::testing
