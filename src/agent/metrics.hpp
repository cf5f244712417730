#pragma once
// Prometheus text exposition (format 0.0.4) of an AgentState, written by hand.
//
// Naming: base units in the name (watts, joules, seconds, hertz, ratio, celsius);
// counters end in _total. Per-GPU series carry dcgm-exporter's labels `gpu` (index),
// `UUID` and `modelName`, plus `hostname` (released dcgm-exporter says `Hostname`; its main
// branch `hostname` since 2026-05), so join `DCGM_FI_DEV_POWER_USAGE` on (gpu, UUID).
// No series is labelled `job` or `instance` (Prometheus would rename them); jobs use
// `job_id`. Values that were not measured (NaN) are left out.
//
// The metric list is in docs/agent-api.md.

#include <string>

#include "agent/agent_state.hpp"

namespace fw::agent {

// The text for one scrape; now_unix_s feeds flexwatt_state_age_seconds. dcgm_names: also the
// two series under dcgm-exporter's names (ServerConfig::metrics_dcgm_names).
std::string render_metrics(const AgentState& s, const std::string& version, double now_unix_s,
                           bool dcgm_names = false);

// A label value escaped for the exposition format (backslash, double quote, newline).
std::string escape_label_value(const std::string& v);

}  // namespace fw::agent
