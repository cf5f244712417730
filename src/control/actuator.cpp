#include "control/actuator.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

Actuator Actuator::of_index(int index) {
  Actuator a;
  if (index >= 0 && index < kNumKnobs) {
    a.kind = Kind::kKnob;
    a.knob = static_cast<Knob>(index);
  }
  return a;
}

std::string Actuator::name() const { return std::string(kActuatorTable[index()].flag_name); }

namespace {
bool every_job_exposes(const PlantInfo& info, int knob) {
  if (info.jobs.empty()) return false;
  for (const JobInfo& j : info.jobs) {
    if (!j.knob_ranges[knob].available) return false;
  }
  return true;
}

std::string valid_names() {
  std::string s = "auto";  // per-GPU rows first, as the message has always read
  for (ActuatorScope scope : {ActuatorScope::kGpu, ActuatorScope::kJob}) {
    for (const ActuatorDef& d : kActuatorTable) {
      if (d.scope == scope) s += ", " + std::string(d.flag_name);
    }
  }
  return s;
}
}  // namespace

Result<Actuator> resolve_actuator(std::string_view name, const PlantInfo& info) {
  if (name == "auto") {
    for (int i : kKnobAutoOrder) {
      if (every_job_exposes(info, i)) return Actuator::of_index(i);
    }
    return Actuator{};
  }
  const int i = find_actuator(name);
  if (i < 0) {
    return Status::InvalidArgument("unknown actuator '" + std::string(name) +
                                   "' (valid: " + valid_names() + ")");
  }
  if (i < kNumKnobs && !every_job_exposes(info, i)) {
    return Status::InvalidArgument("knob '" + std::string(name) +
                                   "' is not exposed by every job of this plant");
  }
  return Actuator::of_index(i);
}

Result<std::vector<Actuator>> resolve_actuators(std::string_view name, const PlantInfo& info) {
  std::vector<Actuator> out;
  if (name == "all") {
    for (int k = 0; k < kNumKnobs; ++k) {
      auto a = resolve_actuator(kKnobNames[k], info);
      if (a.ok()) out.push_back(*a);
    }
    if (out.empty()) out.push_back(Actuator{});
    return out;
  }
  size_t start = 0;
  while (start <= name.size()) {
    const size_t plus = std::min(name.find('+', start), name.size());
    auto a = resolve_actuator(name.substr(start, plus - start), info);
    if (!a.ok()) {
      return Status::InvalidArgument(a.status().message() + " (or 'all', or a '+' list)");
    }
    for (const Actuator& x : out) {
      if (x.index() == a->index()) {
        return Status::InvalidArgument("actuator '" + a->name() + "' listed twice");
      }
    }
    out.push_back(*a);
    start = plus + 1;
  }
  return out;
}

int Ladder::size() const {
  if (!(max > min) || !(step > 0)) return 1;
  return static_cast<int>(std::ceil((max - min) / step - 1e-9)) + 1;
}

double Ladder::value(int i) const {
  const int n = size();
  i = std::clamp(i, 0, n - 1);
  return i == n - 1 ? max : min + step * i;
}

int Ladder::index_of(double v) const {
  const int n = size();
  if (n == 1 || !std::isfinite(v)) return n - 1;
  int best = 0;
  double best_d = std::abs(v - value(0));
  const int guess = std::clamp(static_cast<int>(std::lround((v - min) / step)), 0, n - 1);
  for (int i = std::max(0, guess - 1); i <= std::min(n - 1, guess + 1); ++i) {
    const double d = std::abs(v - value(i));
    if (d < best_d) best_d = d, best = i;
  }
  if (std::abs(v - value(n - 1)) < best_d) best = n - 1;
  return best;
}

double Ladder::at_fraction(double f) const {
  f = std::clamp(std::isfinite(f) ? f : 1.0, 0.0, 1.0);
  return value(index_of(min + f * (max - min)));
}

Ladder job_ladder(const PlantInfo& info, size_t job, const Actuator& a, double cap_step_w) {
  Ladder l;
  if (job >= info.jobs.size()) return l;
  const JobInfo& j = info.jobs[job];
  if (a.kind == Actuator::Kind::kKnob) {
    const KnobRange& r = j.knob_ranges[static_cast<int>(a.knob)];
    l.min = r.min;
    l.max = r.max;
    l.step = r.step > 0 ? r.step : 1;
    return l;
  }
  bool first = true;
  for (int g : j.gpus) {
    if (g < 0 || g >= static_cast<int>(info.gpus.size())) continue;
    const GpuInfo& gi = info.gpus[g];
    l.min = first ? gi.min_cap_w : std::max(l.min, gi.min_cap_w);
    l.max = first ? gi.max_cap_w : std::min(l.max, gi.max_cap_w);
    first = false;
  }
  if (l.max < l.min) l.max = l.min;
  l.step = cap_step_w;
  return l;
}

double job_setting(const PlantInfo& info, const Snapshot& s, size_t job, const Actuator& a) {
  if (job >= info.jobs.size()) return kUnset;
  if (a.kind == Actuator::Kind::kKnob) {
    if (job >= s.jobs.size()) return kUnset;
    return s.jobs[job].knobs[static_cast<int>(a.knob)];
  }
  double sum = 0;
  int n = 0;
  for (int g : info.jobs[job].gpus) {
    if (g < 0 || g >= static_cast<int>(s.gpus.size())) continue;
    if (std::isfinite(s.gpus[g].cap_w)) sum += s.gpus[g].cap_w, ++n;
  }
  return n ? sum / n : kUnset;
}

Command blank_command(const PlantInfo& info) {
  Command c;
  c.power_cap_w.assign(info.gpus.size(), kUnset);
  c.knobs.assign(info.jobs.size(), kNoKnobs);
  return c;
}

void set_job_setting(const PlantInfo& info, size_t job, const Actuator& a, double value,
                     Command& cmd) {
  if (job >= info.jobs.size()) return;
  if (a.kind == Actuator::Kind::kKnob) {
    if (job < cmd.knobs.size()) cmd.knobs[job][static_cast<int>(a.knob)] = value;
    return;
  }
  for (int g : info.jobs[job].gpus) {
    if (g >= 0 && g < static_cast<int>(cmd.power_cap_w.size())) cmd.power_cap_w[g] = value;
  }
}

}  // namespace fw
