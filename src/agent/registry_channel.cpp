#include "agent/registry_channel.hpp"

namespace fw::agent {

std::vector<ChannelJob> RegistryChannel::jobs() const {
  // Two reads of a registry that may change in between: pair them by id, drop the strays.
  auto infos = r_.infos();
  auto states = r_.snapshot();
  std::vector<ChannelJob> out;
  for (const auto& [id, info] : infos) {
    for (const RegisteredJob& s : states) {
      if (s.id != id) continue;
      ChannelJob j;
      j.id = id;
      j.info = info;
      j.reading.tokens_total = s.tokens_total;
      j.reading.steps_total = s.steps_total;
      j.reading.knobs = s.knobs;
      // As of now (the registry aged them to this read; NaN once stale).
      j.reading.starts_in_s = s.announced.starts_in_s;
      j.reading.ends_in_s = s.announced.ends_in_s;
      j.reading.checkpoint_in_iters = s.announced.checkpoint_in_iters;
      j.reading.checkpoint_s = s.announced.checkpoint_s;
      j.reading.step_age_s = s.announced.step_age_s;
      Phase p = Phase::kIdle;
      if (phase_from_name(s.phase, p)) j.reading.phase = p;
      j.report_age_s = s.last_report_age_s;
      j.fill = s.fill;
      out.push_back(std::move(j));
      break;
    }
  }
  return out;
}

}  // namespace fw::agent
