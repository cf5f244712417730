#pragma once
// Parsing and validation of the API's request bodies, without any HTTP machinery, so the
// rules are tested directly. Every parser returns nullopt on success or the HTTP error to
// answer: 400 for a body that is not a JSON object, an object that repeats a key, or a field
// of the wrong JSON type; 422 for well-formed values that break a rule (unknown key, out of
// range, bad order).
// Messages name the field ("schedule[1].after_s: must be greater than the previous").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/agent_state.hpp"
#include "agent/job_registry.hpp"
#include "control/plant.hpp"

namespace fw::agent {

struct HttpError {
  int status = 400;
  std::string message;
};

// Limits on accepted values (also documented in docs/agent-api.md).
inline constexpr double kMaxBudgetW = 1e7;
// No GPU runs below a watt: a smaller budget is a unit mistake (1e-300 was accepted and shown
// as "0.000000 W").
inline constexpr double kMinBudgetW = 1;
inline constexpr double kMinWindowS = 0.1, kMaxWindowS = 86400;
inline constexpr size_t kMaxScheduleEntries = 64;
inline constexpr size_t kMaxControllerSpec = 256;
inline constexpr size_t kMaxJobGpus = 64;
// A job's knob ladder: whole numbers in [0, kMaxKnob], step at least 1.
inline constexpr double kMaxKnob = 1e9;
// A job's announced seconds (starts_in_s, ends_in_s, checkpoint_s): in [0, kMaxAnnouncedS]
// (about 31 years: more is a unit mistake).
inline constexpr double kMaxAnnouncedS = 1e9;

// PUT /v1/budget: {"watts", "window_s"?, "scope"?, "schedule"?: [{"after_s", "watts",
// "window_s"?}], "expected_version"?}.
struct BudgetRequest {
  BudgetState budget;  // schedule[0] is the immediate budget; source "api"
  std::optional<uint64_t> expected_version;
};
std::optional<HttpError> parse_budget_request(std::string_view body, BudgetRequest& out);

// PUT /v1/controller: {"controller": "NAME[:ARG][,K=V…]", "expected_version"?}.
struct ControllerRequest {
  std::string spec;
  std::optional<uint64_t> expected_version;
};
std::optional<HttpError> parse_controller_request(std::string_view body, ControllerRequest& out);

// POST /v1/jobs: {"id"?, "name"?, "kind"?, "gpus"?: [int] | [UUID], "pfi"?, "fill"?: bool,
// "knobs"?: {KNOB: {"min", "max", "step"?, "default"?}}}: min, max, step and default whole
// numbers (422 naming the field otherwise), min <= default <= max, step >= 1; "fill" a boolean
// (400 otherwise); "pipeline_stages"?: [int], a pipeline job's stage per listed GPU (0-4095, as
// many as "gpus": 422 otherwise; into JobInfo::pipeline_stages). An absent id is left empty
// (the server assigns one).
struct JobRequest {
  std::string id;
  JobInfo info;
  // "gpus" given as UUIDs ("GPU-…", as /v1/status lists them): resolved by the server against
  // the node's GPUs into info.gpus (NVML indices). A list is all indices or all UUIDs.
  std::vector<std::string> gpu_uuids;
  double pfi = kUnset;  // optional "pfi", (0, 100]
  bool fill = false;    // optional "fill": the client runs the fill hook (docs/stabilization.md)
};
std::optional<HttpError> parse_job_request(std::string_view body, JobRequest& out);

// POST /v1/jobs/{id}/progress: {"tokens_total", "steps_total", "phase"?, "starts_in_s"?,
// "ends_in_s"?, "checkpoint_in_iters"?, "checkpoint_s"?, "step_age_s"?}: the announcements
// (JobAnnouncements)
// as of this report, each absent one unknown (NaN); the seconds in [0, kMaxAnnouncedS],
// checkpoint_in_iters a whole number >= 1 (422 naming the field otherwise; 400 when not a
// number).
std::optional<HttpError> parse_progress_request(std::string_view body, JobProgress& out);

// PUT /v1/jobs/{id}/pfi: {"pfi": (0, 100], "source"?: "sweep" (default) | "registration" |
// "operator"}.
struct PfiRequest {
  double pfi = kUnset;
  std::string source = "sweep";
};
std::optional<HttpError> parse_pfi_request(std::string_view body, PfiRequest& out);

// Job ids: 1 to 64 of [A-Za-z0-9_.-].
bool valid_job_id(std::string_view id);

}  // namespace fw::agent
