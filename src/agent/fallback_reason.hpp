#pragma once
// FallbackReason: why the agent put its static safe setting in force instead of the
// controller's command (docs/agent.md "Fail safe"). The names are the API's and /metrics'
// `reason` label values; every reason is listed in /v1/status' fallbacks_total from the start.

#include <array>
#include <string_view>

namespace fw::agent {

enum class FallbackReason {
  kNone,
  kStaleTelemetry,    // a failed or stale telemetry read
  kControllerError,   // the controller threw
  kJobChannelSilent,  // a registered job stopped reporting
  kNoActuator,        // a knob controller while no job exposes one of its knobs
};

inline constexpr std::array<FallbackReason, 4> kFallbackReasons = {
    FallbackReason::kStaleTelemetry, FallbackReason::kControllerError,
    FallbackReason::kJobChannelSilent, FallbackReason::kNoActuator};

// "" for kNone.
constexpr std::string_view fallback_name(FallbackReason r) {
  switch (r) {
    case FallbackReason::kStaleTelemetry:
      return "stale_telemetry";
    case FallbackReason::kControllerError:
      return "controller_error";
    case FallbackReason::kJobChannelSilent:
      return "job_channel_silent";
    case FallbackReason::kNoActuator:
      return "no_actuator";
    case FallbackReason::kNone:
      break;
  }
  return "";
}

}  // namespace fw::agent
