// A fake libnvidia-ml.so.1 for tests: exports the subset of the NVML C API that flexwatt uses,
// driven by a small text script named in FAKE_NVML_SCRIPT (read at nvmlInit). Without the
// variable it fakes one GPU with defaults. Built twice: the "current" variant exports versioned
// symbols (nvmlInit_v2, ...), the field-value call and nvmlDeviceGetCurrentClocksEventReasons;
// the "old" variant (FAKE_NVML_OLD) exports only the unversioned names, no field values and only
// nvmlDeviceGetCurrentClocksThrottleReasons, like an old driver.
//
// Script: one directive per line, '#' starts a comment, G is a GPU index or '*' (all GPUs).
//   gpus N                          number of GPUs (default 1; put it first)
//   name G TEXT...                  device name
//   power G W [W ...]               power in watts; each averaged read (PowerUsage, field 185)
//                                   takes the next value, cycling (one value: constant); field
//                                   186 repeats the value last taken
//   field_instant G yes|no          whether field 186 (instant power) is supported (default yes)
//   field_average G yes|no          whether field 185 (1 s average power) is supported (default
//                                   no; the h100/h200/b200 profiles: yes)
//   energy G counter|none|backwards [start_j=X] [step_j=Y]
//                                   total-energy counter: each call returns start + k*step
//                                   (backwards: start - k*step); none: NOT_SUPPORTED
//   limits G [min=W] [max=W] [default=W] [enforced=W] [limit=W] [clamp=W]
//                                   power-limit constraints; limit: the management limit (the
//                                   last one set; default: the enforced limit); clamp: the device
//                                   enforces at most this much whatever is set (another agent's
//                                   cap)
//   util G sm=P mem=P               utilisation in percent
//   clock G MHZ                     SM clock
//   temp G C                        temperature
//   reasons G MASK                  clock-event reasons (decimal or 0x hex)
//   persistence G on|off            persistence mode, as nvmlDeviceGetPersistenceMode reports it
//                                   (default on; the fake, like flexwatt, never sets it)
//   lost G after_reads=N            GPU G falls off the bus at power read N+1: from then on
//                                   every call on it returns NVML_ERROR_GPU_IS_LOST, and so does
//                                   nvmlDeviceGetHandleByIndex in every later process while the
//                                   state file (below) keeps it
//   fail CALL CODE [gpu=G] [after=N] [times=K]
//                                   CALL (an NVML function name, or '*') returns CODE
//                                   (gpu_lost | not_supported | no_permission | invalid_argument
//                                   | unknown | a number) after N successful calls (default 0),
//                                   K times (default: from then on), then succeeds again
//
//   profile G a100|h100|h200|b200   a GPU model as NVIDIA documents it (nvmlDeviceGetPowerUsage):
//                                   name and limit range; a100 (GA100): PowerUsage is
//                                   instantaneous, field 185 (NVML_FI_DEV_POWER_AVERAGE) is
//                                   NOT_SUPPORTED, field 186 is instantaneous; h100/h200/b200:
//                                   PowerUsage and field 185 are the trailing 1 s average, field
//                                   186 instantaneous. Energy counter update period: 100 ms on
//                                   a100, 20 ms on the others (assumptions: scripts/gpu_check.sh
//                                   measures both on a real GPU). Put it before other directives.
//   load G period_s=P high_w=H low_w=L [duty=D] [phase_s=X]
//                                   power follows a square wave in wall time (CLOCK_MONOTONIC,
//                                   shared by every process): H for the first D of each period
//                                   (default 0.5), L for the rest, never above the enforced
//                                   limit; the energy counter is its exact integral since
//                                   nvmlInit (+ start_j), published every update period; the
//                                   averaged readings are (E(t) - E(t-1 s)) / 1 s. Without
//                                   `load` a GPU replays `power` per read (below).
//   average G avg_1s|instant        override the profile: what PowerUsage and field 185 give
//   energy_update_ms G MS           override the profile's counter update period
//   writes G root|any|not_supported who may set the power limit: root (NVIDIA's rule: other
//                                   users get NO_PERMISSION; the default), anyone, or no one
//                                   (NOT_SUPPORTED)
//   order P0 P1 ...                 NVML index i is physical GPU P_i (a reboot's enumeration).
//                                   Every other directive, UUID, `fail gpu=` and the state file
//                                   name physical GPUs; without `order` index = physical.
//   latency CALL MS [gpu=G]         CALL ('*': every call) sleeps MS milliseconds first
//   hang CALL [gpu=G] [after=N] [times=K] [for_ms=MS]
//                                   CALL hangs after N calls, K times (default: every later
//                                   call), each for MS milliseconds (default an hour: a wedged
//                                   GPU)
//   init CODE                       nvmlInit fails with CODE (e.g. 9: driver not loaded)
//   driver VERSION                  what nvmlSystemGetDriverVersion reports (default 590.44.01, a
//                                   fake value). It also picks the NVML_FI_PWR_SMOOTHING_* field
//                                   ids, as NVIDIA's headers do: the block starts at 256 on
//                                   branches 575-589 (nvml.h of CUDA 12.9 and 13.0), at 251 on
//                                   570-574 and from 590 on (CUDA 12.8's and 13.1's nvml.h)
//   smoothing G yes|no [enabled=0|1] [active=K] [profile=K] [floor_pct=X] [up_w_per_s=X]
//             [down_w_per_s=X] [hyst_ms=X] [min_pct=X] [max_pct=X] [tmp_ceil_w=X]
//                                   GPU power smoothing (NVML API Reference, "Power Smoothing
//                                   Information"; Blackwell and newer): whether G has it (the
//                                   b200 profile: yes, TMP ceiling 1000 W; a100/h100/h200 and
//                                   the default GPU: no, every call and field NOT_SUPPORTED), its
//                                   state, active preset profile (of 5,
//                                   NVML_POWER_SMOOTHING_MAX_NUM_PROFILES), the parameters of
//                                   preset profile K (without profile=: of every profile), and
//                                   the settable floor range in percent (default 0-100, the
//                                   API's). The starting parameters (floor 20 %, up 500 W/s, down
//                                   250 W/s, hysteresis 1000 ms) are placeholders, not NVIDIA's.
//                                   The current variant exports
//                                   nvmlDevicePowerSmoothing{ActivatePresetProfile,
//                                   UpdatePresetProfileParam,SetState} (the old one does not: a
//                                   driver before R570): each needs root as `writes` says
//                                   (NO_PERMISSION, or NOT_SUPPORTED for `writes G
//                                   not_supported`), checks the struct version
//                                   (ARGUMENT_VERSION_MISMATCH), the profile id, the state (0/1)
//                                   and the value (floor within min_pct-max_pct, rates and
//                                   hysteresis finite and >= 0; INVALID_ARGUMENT). Reads are the
//                                   field values ENABLED .. ADMIN_OVERRIDE_RAMP_DOWN_HYST_VAL
//                                   (18 ids); the PROFILE_* ones take the profile in scopeId
//                                   (INVALID_ARGUMENT past the last), ramp rates in mW/s; the
//                                   admin overrides are never set (0xFFFFFFFF). Value types are
//                                   the fake's choice (the profile floor a double, the rest
//                                   unsigned int): NVIDIA does not document them.
//
// FAKE_NVML_STATE=FILE (optional) is the driver state that outlives a process: lines
// "P LIMIT_W" (management limits) then "P lost" (a GPU that fell off the bus stays off until a
// reboot), then, for a GPU whose power smoothing was ever set, "P smoothing ENABLED ACTIVE" and
// one "P smoothing_profile K FLOOR_PCT UP_W_PER_S DOWN_W_PER_S HYST_MS" per profile; P the
// physical GPU (its UUID's, whatever its index), read at nvmlInit (after the script) and
// rewritten on every change. Power smoothing settings survive the driver unloading (an
// assumption: NVIDIA does not say). With
// persistence mode off, the last nvmlShutdown of a process is the driver unloading: that GPU's
// limit reverts to its default.

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "nvml/nvml_api.hpp"

namespace {
namespace nv = fw::nvml;

enum class Energy { kCounter, kNone, kBackwards };
enum class Writes { kRoot, kAny, kNotSupported };

// A square wave in wall time (see `load`).
struct Load {
  bool on = false;
  double period_s = 1, high_w = 0, low_w = 0, duty = 0.5, phase_s = 0;
  // Seconds spent high in [0, x] (x in wall seconds).
  double high_time(double x) const {
    const double y = x + phase_s, hp = duty * period_s;
    const double k = std::floor(y / period_s), r = y - k * period_s;
    return k * hp + std::min(r, hp);
  }
};

// Power smoothing (see `smoothing`).
constexpr unsigned kSmoothingProfiles = 5;  // NVML_POWER_SMOOTHING_MAX_NUM_PROFILES
struct SmoothingProfile {
  double floor_pct = 20, up_w_per_s = 500, down_w_per_s = 250, hyst_ms = 1000;  // placeholders
};
struct Smoothing {
  bool supported = false;
  bool enabled = false;
  unsigned active = 0;
  double min_pct = 0, max_pct = 100;
  double tmp_ceil_w = 700;
  SmoothingProfile profiles[kSmoothingProfiles];
  bool persisted = false;  // set at least once (here or in an earlier process): in the state file
};

struct Gpu {
  std::string name = "Fake NVIDIA GPU";
  std::vector<double> power_w = {300.0};
  size_t power_index = 0;
  bool field_instant = true;
  bool field_average = false;  // field 185
  bool avg_1s = false;         // PowerUsage / field 185: trailing 1 s average (load mode)
  double energy_update_s = 0.02;
  Energy energy = Energy::kCounter;
  double energy_start_j = 1000.0, energy_step_j = 30.0;
  long energy_calls = 0;
  double min_w = 200, max_w = 700, default_w = 700, enforced_w = 700;
  double clamp_w = std::numeric_limits<double>::infinity();
  double limit_w = std::numeric_limits<double>::quiet_NaN();  // NaN: as enforced_w
  unsigned sm_util = 50, mem_util = 25, clock_mhz = 1500, temp_c = 60;
  unsigned long long reasons = 0;
  bool persistence = true;
  Writes writes = Writes::kRoot;
  Smoothing smoothing;
  long lost_after_reads = -1;
  long reads = 0;
  bool lost = false;
  Load load;
  // Load mode: the enforced limit's history (time, W) since `base_t`, whose energy before it is
  // folded into base_j.
  std::vector<std::pair<double, double>> caps;
  double base_t = 0, base_j = 0;
};

struct Fail {
  std::string call;
  nv::Return rc = nv::kErrorUnknown;
  int gpu = -1;
  long after = 0;
  long times = -1;          // failures before the call recovers; -1: never recovers
  std::vector<long> calls;  // per GPU (index gpus.size() for calls not tied to a GPU)
};

struct Delay {
  std::string call;
  int gpu = -1;
  double ms = 0;  // latency, or how long a hang lasts
  bool hang = false;
  long after = 0;
  long times = -1;
  std::vector<long> calls;
};

int g_init_count = 0;
std::vector<Gpu> g_gpus;   // by physical id
std::vector<int> g_order;  // NVML index -> physical id
std::vector<Fail> g_fails;
std::vector<Delay> g_delays;
nv::Return g_init_rc = nv::kSuccess;
std::string g_driver_version = "590.44.01";

// The first NVML_FI_PWR_SMOOTHING_* id for the driver branch (see `driver`).
[[maybe_unused]] unsigned smoothing_field_base() {
  const unsigned long branch = std::strtoul(g_driver_version.c_str(), nullptr, 10);
  return (branch >= 575 && branch <= 589) ? 256 : 251;
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool parse_code(const std::string& s, nv::Return& rc) {
  if (s == "gpu_lost")
    rc = nv::kErrorGpuIsLost;
  else if (s == "not_supported")
    rc = nv::kErrorNotSupported;
  else if (s == "no_permission")
    rc = nv::kErrorNoPermission;
  else if (s == "invalid_argument")
    rc = nv::kErrorInvalidArgument;
  else if (s == "unknown")
    rc = nv::kErrorUnknown;
  else {
    char* end = nullptr;
    rc = static_cast<nv::Return>(std::strtol(s.c_str(), &end, 10));
    return end && *end == '\0' && !s.empty();
  }
  return true;
}

// key=value -> value as double; false when the key does not match.
bool kv(const std::string& tok, const char* key, double& out) {
  const size_t n = std::strlen(key);
  if (tok.size() <= n + 1 || tok.compare(0, n, key) != 0 || tok[n] != '=') return false;
  out = std::strtod(tok.c_str() + n + 1, nullptr);
  return true;
}

// Applies a GPU model (see `profile`); false for an unknown one.
bool apply_profile(Gpu& d, const std::string& model) {
  if (model == "a100") {
    d.name = "NVIDIA A100-SXM4-80GB";
    d.min_w = 100, d.max_w = d.default_w = d.enforced_w = 400;
    d.avg_1s = false, d.field_average = false, d.field_instant = true;
    d.energy_update_s = 0.1;
    d.smoothing.supported = false;
  } else if (model == "h100" || model == "h200" || model == "b200") {
    d.name = model == "h100"   ? "NVIDIA H100 80GB HBM3"
             : model == "h200" ? "NVIDIA H200"
                               : "NVIDIA B200";
    d.min_w = 200;
    d.max_w = d.default_w = d.enforced_w = model == "b200" ? 1000 : 700;
    d.avg_1s = true, d.field_average = true, d.field_instant = true;
    d.energy_update_s = 0.02;
    d.smoothing.supported = model == "b200";  // Blackwell
    d.smoothing.tmp_ceil_w = d.max_w;
  } else {
    return false;
  }
  return true;
}

bool load_script(const char* path) {
  g_gpus.assign(1, Gpu{});
  g_order.clear();
  g_fails.clear();
  g_delays.clear();
  g_init_rc = nv::kSuccess;
  g_driver_version = "590.44.01";
  if (!path || !*path) {
    g_order = {0};
    return true;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fake_nvml: cannot read script %s\n", path);
    return false;
  }
  std::string line;
  int line_no = 0;
  auto bad = [&](const std::string& why) {
    std::fprintf(stderr, "fake_nvml: %s:%d: %s\n", path, line_no, why.c_str());
    return false;
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (size_t h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ss(line);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    const std::string& cmd = tok[0];
    if (cmd == "gpus") {
      if (tok.size() != 2) return bad("gpus N");
      g_gpus.assign(std::strtoul(tok[1].c_str(), nullptr, 10), Gpu{});
      continue;
    }
    if (cmd == "order") {
      g_order.clear();
      for (size_t i = 1; i < tok.size(); ++i) {
        const long p = std::strtol(tok[i].c_str(), nullptr, 10);
        if (p < 0 || p >= static_cast<long>(g_gpus.size())) return bad("order: no GPU " + tok[i]);
        g_order.push_back(static_cast<int>(p));
      }
      std::vector<int> sorted = g_order;
      std::sort(sorted.begin(), sorted.end());
      if (sorted.size() != g_gpus.size() ||
          std::unique(sorted.begin(), sorted.end()) != sorted.end())
        return bad("order: a permutation of every GPU");
      continue;
    }
    if (cmd == "driver") {
      if (tok.size() != 2) return bad("driver VERSION");
      g_driver_version = tok[1];
      continue;
    }
    if (cmd == "init") {
      if (tok.size() != 2 || !parse_code(tok[1], g_init_rc)) return bad("init CODE");
      continue;
    }
    if (cmd == "fail") {
      if (tok.size() < 3) return bad("fail CALL CODE [gpu=G] [after=N] [times=K]");
      Fail f;
      f.call = tok[1];
      if (!parse_code(tok[2], f.rc)) return bad("unknown code " + tok[2]);
      for (size_t i = 3; i < tok.size(); ++i) {
        double v = 0;
        if (kv(tok[i], "gpu", v))
          f.gpu = static_cast<int>(v);
        else if (kv(tok[i], "after", v))
          f.after = static_cast<long>(v);
        else if (kv(tok[i], "times", v))
          f.times = static_cast<long>(v);
        else
          return bad("unknown option " + tok[i]);
      }
      f.calls.assign(g_gpus.size() + 1, 0);
      g_fails.push_back(f);
      continue;
    }
    if (cmd == "latency" || cmd == "hang") {
      Delay dl;
      dl.hang = cmd == "hang";
      if (dl.hang) dl.ms = 3600e3;
      if (tok.size() < 2) return bad(cmd + " CALL ...");
      dl.call = tok[1];
      size_t i = 2;
      if (!dl.hang) {
        if (tok.size() < 3) return bad("latency CALL MS [gpu=G]");
        dl.ms = std::strtod(tok[2].c_str(), nullptr);
        i = 3;
      }
      for (; i < tok.size(); ++i) {
        double v = 0;
        if (kv(tok[i], "gpu", v))
          dl.gpu = static_cast<int>(v);
        else if (dl.hang && kv(tok[i], "after", v))
          dl.after = static_cast<long>(v);
        else if (dl.hang && kv(tok[i], "times", v))
          dl.times = static_cast<long>(v);
        else if (dl.hang && kv(tok[i], "for_ms", v))
          dl.ms = v;
        else
          return bad("unknown option " + tok[i]);
      }
      dl.calls.assign(g_gpus.size() + 1, 0);
      g_delays.push_back(dl);
      continue;
    }
    if (tok.size() < 2) return bad("missing GPU index");
    size_t lo = 0, hi = g_gpus.size();
    if (tok[1] != "*") {
      lo = std::strtoul(tok[1].c_str(), nullptr, 10);
      if (lo >= g_gpus.size()) return bad("GPU index out of range");
      hi = lo + 1;
    }
    for (size_t g = lo; g < hi; ++g) {
      Gpu& d = g_gpus[g];
      if (cmd == "name") {
        d.name.clear();
        for (size_t i = 2; i < tok.size(); ++i) d.name += (i > 2 ? " " : "") + tok[i];
      } else if (cmd == "profile") {
        if (tok.size() != 3 || !apply_profile(d, tok[2]))
          return bad("profile G a100|h100|h200|b200");
      } else if (cmd == "load") {
        d.load.on = true;
        for (size_t i = 2; i < tok.size(); ++i) {
          if (!kv(tok[i], "period_s", d.load.period_s) && !kv(tok[i], "high_w", d.load.high_w) &&
              !kv(tok[i], "low_w", d.load.low_w) && !kv(tok[i], "duty", d.load.duty) &&
              !kv(tok[i], "phase_s", d.load.phase_s))
            return bad("unknown option " + tok[i]);
        }
        if (!(d.load.period_s > 0) || !(d.load.duty >= 0 && d.load.duty <= 1))
          return bad("load: period_s > 0, duty in [0, 1]");
      } else if (cmd == "average") {
        if (tok.size() != 3 || (tok[2] != "avg_1s" && tok[2] != "instant"))
          return bad("average G avg_1s|instant");
        d.avg_1s = tok[2] == "avg_1s";
      } else if (cmd == "energy_update_ms" && tok.size() == 3) {
        d.energy_update_s = std::strtod(tok[2].c_str(), nullptr) / 1000.0;
      } else if (cmd == "writes") {
        if (tok.size() != 3) return bad("writes G root|any|not_supported");
        if (tok[2] == "root")
          d.writes = Writes::kRoot;
        else if (tok[2] == "any")
          d.writes = Writes::kAny;
        else if (tok[2] == "not_supported")
          d.writes = Writes::kNotSupported;
        else
          return bad("writes G root|any|not_supported");
      } else if (cmd == "power") {
        d.power_w.clear();
        for (size_t i = 2; i < tok.size(); ++i)
          d.power_w.push_back(std::strtod(tok[i].c_str(), nullptr));
        if (d.power_w.empty()) return bad("power needs values");
      } else if (cmd == "field_instant" || cmd == "field_average") {
        if (tok.size() != 3) return bad(cmd + " G yes|no");
        (cmd == "field_instant" ? d.field_instant : d.field_average) = tok[2] == "yes";
      } else if (cmd == "energy") {
        if (tok.size() < 3) return bad("energy G counter|none|backwards");
        if (tok[2] == "counter")
          d.energy = Energy::kCounter;
        else if (tok[2] == "none")
          d.energy = Energy::kNone;
        else if (tok[2] == "backwards")
          d.energy = Energy::kBackwards;
        else
          return bad("unknown energy mode " + tok[2]);
        for (size_t i = 3; i < tok.size(); ++i) {
          if (!kv(tok[i], "start_j", d.energy_start_j) && !kv(tok[i], "step_j", d.energy_step_j))
            return bad("unknown option " + tok[i]);
        }
      } else if (cmd == "limits") {
        for (size_t i = 2; i < tok.size(); ++i) {
          if (!kv(tok[i], "min", d.min_w) && !kv(tok[i], "max", d.max_w) &&
              !kv(tok[i], "default", d.default_w) && !kv(tok[i], "enforced", d.enforced_w) &&
              !kv(tok[i], "clamp", d.clamp_w) && !kv(tok[i], "limit", d.limit_w))
            return bad("unknown option " + tok[i]);
        }
      } else if (cmd == "util") {
        for (size_t i = 2; i < tok.size(); ++i) {
          double v = 0;
          if (kv(tok[i], "sm", v))
            d.sm_util = static_cast<unsigned>(v);
          else if (kv(tok[i], "mem", v))
            d.mem_util = static_cast<unsigned>(v);
          else
            return bad("unknown option " + tok[i]);
        }
      } else if (cmd == "clock" && tok.size() == 3) {
        d.clock_mhz = std::strtoul(tok[2].c_str(), nullptr, 10);
      } else if (cmd == "temp" && tok.size() == 3) {
        d.temp_c = std::strtoul(tok[2].c_str(), nullptr, 10);
      } else if (cmd == "reasons" && tok.size() == 3) {
        d.reasons = std::strtoull(tok[2].c_str(), nullptr, 0);
      } else if (cmd == "smoothing") {
        if (tok.size() < 3 || (tok[2] != "yes" && tok[2] != "no"))
          return bad("smoothing G yes|no [key=value ...]");
        Smoothing& sm = d.smoothing;
        sm.supported = tok[2] == "yes";
        double profile = -1;
        for (size_t i = 3; i < tok.size(); ++i) {
          if (kv(tok[i], "profile", profile) && (profile < 0 || profile >= kSmoothingProfiles))
            return bad("smoothing: profile 0-4");
        }
        for (size_t i = 3; i < tok.size(); ++i) {
          double v = 0;
          const size_t lo_p = profile < 0 ? 0 : static_cast<size_t>(profile);
          const size_t hi_p = profile < 0 ? kSmoothingProfiles : lo_p + 1;
          auto each = [&](double SmoothingProfile::*m) {
            for (size_t k = lo_p; k < hi_p; ++k) sm.profiles[k].*m = v;
          };
          if (kv(tok[i], "profile", v)) {
          } else if (kv(tok[i], "enabled", v)) {
            sm.enabled = v != 0;
          } else if (kv(tok[i], "active", v)) {
            if (v < 0 || v >= kSmoothingProfiles) return bad("smoothing: active 0-4");
            sm.active = static_cast<unsigned>(v);
          } else if (kv(tok[i], "floor_pct", v)) {
            each(&SmoothingProfile::floor_pct);
          } else if (kv(tok[i], "up_w_per_s", v)) {
            each(&SmoothingProfile::up_w_per_s);
          } else if (kv(tok[i], "down_w_per_s", v)) {
            each(&SmoothingProfile::down_w_per_s);
          } else if (kv(tok[i], "hyst_ms", v)) {
            each(&SmoothingProfile::hyst_ms);
          } else if (!kv(tok[i], "min_pct", sm.min_pct) && !kv(tok[i], "max_pct", sm.max_pct) &&
                     !kv(tok[i], "tmp_ceil_w", sm.tmp_ceil_w)) {
            return bad("unknown option " + tok[i]);
          }
        }
      } else if (cmd == "persistence") {
        if (tok.size() != 3 || (tok[2] != "on" && tok[2] != "off"))
          return bad("persistence G on|off");
        d.persistence = tok[2] == "on";
      } else if (cmd == "lost" && tok.size() == 3) {
        double v = 0;
        if (!kv(tok[2], "after_reads", v)) return bad("lost G after_reads=N");
        d.lost_after_reads = static_cast<long>(v);
      } else {
        return bad("unknown directive '" + cmd + "'");
      }
    }
  }
  if (g_order.empty()) {
    for (size_t g = 0; g < g_gpus.size(); ++g) g_order.push_back(static_cast<int>(g));
  }
  return true;
}

[[maybe_unused]] std::string uuid_of(int phys) {
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-fa4e0000-0000-4000-8000-%012d", phys);
  return uuid;
}

// Physical id of a device handle, or -1.
int index_of(nv::Device h) {
  const auto i = static_cast<long>(reinterpret_cast<uintptr_t>(h)) - 1;
  return (i >= 0 && i < static_cast<long>(g_gpus.size())) ? static_cast<int>(i) : -1;
}

// Injected latency or hang of a call (gpu: physical id, or g_gpus.size() for global calls).
void delay(const char* call, int gpu) {
  for (Delay& dl : g_delays) {
    if ((dl.call != call && dl.call != "*") || (dl.gpu >= 0 && dl.gpu != gpu)) continue;
    const long k = dl.calls[static_cast<size_t>(gpu)]++;
    if (dl.hang && (k < dl.after || (dl.times >= 0 && k >= dl.after + dl.times))) continue;
    for (double left_ms = dl.ms; left_ms > 0; left_ms -= 100) {  // usleep takes < 1 s
      ::usleep(static_cast<useconds_t>(std::min(left_ms, 100.0) * 1000.0));
    }
  }
}

void save_state();

// Common entry checks for a device call: initialised, valid handle, lost GPU, injected failure.
nv::Return enter(const char* call, nv::Device h, int* gpu_out) {
  if (g_init_count <= 0) return nv::kErrorUninitialized;
  const int gpu = index_of(h);
  if (gpu < 0) return nv::kErrorInvalidArgument;
  if (gpu_out) *gpu_out = gpu;
  delay(call, gpu);
  const Gpu& d = g_gpus[gpu];
  if (d.lost) return nv::kErrorGpuIsLost;
  for (Fail& f : g_fails) {
    if ((f.call == call || f.call == "*") && (f.gpu < 0 || f.gpu == gpu)) {
      const long k = f.calls[gpu]++;
      if (k >= f.after && (f.times < 0 || k < f.after + f.times)) return f.rc;
    }
  }
  return nv::kSuccess;
}

nv::Return enter_global(const char* call) {
  if (g_init_count <= 0) return nv::kErrorUninitialized;
  delay(call, static_cast<int>(g_gpus.size()));
  for (Fail& f : g_fails) {
    if ((f.call == call || f.call == "*") && f.gpu < 0) {
      const long k = f.calls[g_gpus.size()]++;
      if (k >= f.after && (f.times < 0 || k < f.after + f.times)) return f.rc;
    }
  }
  return nv::kSuccess;
}

unsigned to_mw(double w) { return static_cast<unsigned>(std::llround(w * 1000.0)); }

// A power read of a lost GPU: it falls off the bus on read number lost_after_reads + 1, and
// stays lost for every process until a "reboot" (the state file is removed).
bool lost_now(Gpu& d) {
  if (!d.lost && d.lost_after_reads >= 0 && d.reads >= d.lost_after_reads) {
    d.lost = true;
    save_state();
  }
  return d.lost;
}

// ---- load mode: power as a function of wall time ----

// Energy (J) drawn in [a, b] at a constant enforced limit.
double energy_at_cap(const Load& l, double a, double b, double cap_w) {
  if (b <= a) return 0;
  const double hi = l.high_time(b) - l.high_time(a);
  return std::min(l.high_w, cap_w) * hi + std::min(l.low_w, cap_w) * ((b - a) - hi);
}

// Energy drawn in [a, b] (a >= d.base_t), over the enforced limit's history.
double energy_between(const Gpu& d, double a, double b) {
  double e = 0;
  for (size_t i = 0; i < d.caps.size(); ++i) {
    const double s = std::max(a, d.caps[i].first);
    const double t = std::min(b, i + 1 < d.caps.size() ? d.caps[i + 1].first : b);
    e += energy_at_cap(d.load, s, t, d.caps[i].second);
  }
  return e;
}

// Total energy since nvmlInit (J, before start_j) at wall time t.
double energy_total(Gpu& d, double t) {
  // Fold limit changes older than 5 s into the base so the history stays short.
  while (d.caps.size() > 2 && d.caps[1].first < t - 5.0) {
    d.base_j += energy_at_cap(d.load, d.base_t, d.caps[1].first, d.caps[0].second);
    d.base_t = d.caps[1].first;
    d.caps.erase(d.caps.begin());
    d.caps[0].first = d.base_t;
  }
  return d.base_j + energy_between(d, d.base_t, t);
}

void start_load(Gpu& d) {
  const double t = now_s();
  d.caps.assign(1, {t, d.enforced_w});
  d.base_t = t;
  d.base_j = 0;
}

double instant_w(const Gpu& d, double t) {
  const double y = t + d.load.phase_s;
  const double r = y - std::floor(y / d.load.period_s) * d.load.period_s;
  return std::min(r < d.load.duty * d.load.period_s ? d.load.high_w : d.load.low_w, d.enforced_w);
}

// What PowerUsage / field 185 give in load mode.
double averaged_w(Gpu& d, double t) {
  if (!d.avg_1s) return instant_w(d, t);
  const double a = std::max(d.base_t, t - 1.0);
  if (t - a < 1e-6) return instant_w(d, t);
  return (energy_total(d, t) - energy_total(d, a)) / (t - a);
}

// A power reading in mW. `average`: the averaged reading (PowerUsage, field 185), which in
// replay mode takes the next `power` value and counts as a read; otherwise the instantaneous
// one (field 186), which in replay mode repeats the value last taken (the first before any).
unsigned next_power_mw(Gpu& d, bool average) {
  if (d.load.on) {
    ++d.reads;
    const double t = now_s();
    return to_mw(average ? averaged_w(d, t) : instant_w(d, t));
  }
  if (!average) {
    return to_mw(
        d.power_w[(d.power_index + d.power_w.size() - (d.power_index ? 1 : 0)) % d.power_w.size()]);
  }
  ++d.reads;
  const double w = d.power_w[d.power_index % d.power_w.size()];
  ++d.power_index;
  return to_mw(w);
}

void set_enforced(Gpu& d, double w) {
  d.enforced_w = w;
  if (d.load.on) {
    const double t = now_s();
    energy_total(d, t);
    d.caps.emplace_back(t, w);
  }
}

void load_state() {
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (!path) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    int g = 0;
    std::string what;
    if (!(ss >> g >> what) || g < 0 || g >= static_cast<int>(g_gpus.size())) continue;
    Gpu& d = g_gpus[g];
    if (what == "lost") {
      d.lost = true;
    } else if (what == "smoothing") {
      int enabled = 0;
      unsigned active = 0;
      if (ss >> enabled >> active && active < kSmoothingProfiles) {
        d.smoothing.enabled = enabled != 0;
        d.smoothing.active = active;
        d.smoothing.persisted = true;
      }
    } else if (what == "smoothing_profile") {
      unsigned k = 0;
      SmoothingProfile p;
      if (ss >> k >> p.floor_pct >> p.up_w_per_s >> p.down_w_per_s >> p.hyst_ms &&
          k < kSmoothingProfiles)
        d.smoothing.profiles[k] = p;
    } else {
      d.limit_w = std::strtod(what.c_str(), nullptr);
      d.enforced_w = std::min(d.limit_w, d.clamp_w);
    }
  }
}

void save_state() {
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (!path) return;
  std::ofstream out(path, std::ios::trunc);
  for (size_t g = 0; g < g_gpus.size(); ++g) {
    const Gpu& d = g_gpus[g];
    out << g << ' ' << (std::isnan(d.limit_w) ? d.enforced_w : d.limit_w) << '\n';
  }
  for (size_t g = 0; g < g_gpus.size(); ++g) {
    if (g_gpus[g].lost) out << g << " lost\n";
  }
  out.precision(17);
  for (size_t g = 0; g < g_gpus.size(); ++g) {
    const Smoothing& sm = g_gpus[g].smoothing;
    if (!sm.persisted) continue;
    out << g << " smoothing " << (sm.enabled ? 1 : 0) << ' ' << sm.active << '\n';
    for (unsigned k = 0; k < kSmoothingProfiles; ++k) {
      const SmoothingProfile& p = sm.profiles[k];
      out << g << " smoothing_profile " << k << ' ' << p.floor_pct << ' ' << p.up_w_per_s << ' '
          << p.down_w_per_s << ' ' << p.hyst_ms << '\n';
    }
  }
}

nv::Return do_init() {
  if (g_init_count == 0) {
    if (!load_script(std::getenv("FAKE_NVML_SCRIPT"))) return nv::kErrorUnknown;
    if (g_init_rc != nv::kSuccess) return g_init_rc;
    load_state();
    for (Gpu& d : g_gpus) {
      if (d.load.on) start_load(d);
    }
  }
  ++g_init_count;
  return nv::kSuccess;
}

nv::Return do_count(unsigned* n) {
  if (nv::Return rc = enter_global("nvmlDeviceGetCount"); rc != nv::kSuccess) return rc;
  if (!n) return nv::kErrorInvalidArgument;
  *n = static_cast<unsigned>(g_order.size());
  return nv::kSuccess;
}

// A lost GPU keeps its index (the count does not change) but yields no handle.
nv::Return do_handle(unsigned i, nv::Device* h) {
  if (nv::Return rc = enter_global("nvmlDeviceGetHandleByIndex"); rc != nv::kSuccess) return rc;
  if (!h || i >= g_order.size()) return nv::kErrorInvalidArgument;
  const int phys = g_order[i];
  if (g_gpus[phys].lost) return nv::kErrorGpuIsLost;
  *h = reinterpret_cast<nv::Device>(static_cast<uintptr_t>(phys) + 1);
  return nv::kSuccess;
}

// NVML_FI_PWR_SMOOTHING_* field at `offset` in the block (nv::kSmoothingField*), into v.
[[maybe_unused]] nv::Return smoothing_field(const Gpu& d, unsigned offset, nv::FieldValue& v) {
  const Smoothing& sm = d.smoothing;
  if (!sm.supported) return nv::kErrorNotSupported;
  const bool per_profile = offset >= nv::kSmoothingFieldProfilePercentFloor &&
                           offset <= nv::kSmoothingFieldProfileHysteresis;
  if (per_profile && v.scope_id >= kSmoothingProfiles) return nv::kErrorInvalidArgument;
  const SmoothingProfile& p = sm.profiles[per_profile ? v.scope_id : sm.active];
  auto uint = [&](double x) {
    v.value_type = nv::kValueUnsignedInt;
    v.value.ui_val = static_cast<unsigned>(std::llround(x));
    return nv::kSuccess;
  };
  switch (offset) {
    case nv::kSmoothingFieldEnabled:
      return uint(sm.enabled ? 1 : 0);
    case nv::kSmoothingFieldAppliedTmpCeil:
      return uint(sm.tmp_ceil_w);
    case nv::kSmoothingFieldAppliedTmpFloor:
      return uint(sm.enabled ? sm.tmp_ceil_w * p.floor_pct / 100.0 : 0.0);
    case nv::kSmoothingFieldMaxPercentFloor:
      return uint(sm.max_pct);
    case nv::kSmoothingFieldMinPercentFloor:
      return uint(sm.min_pct);
    case 7:  // HW_CIRCUITRY_PERCENT_LIFETIME_REMAINING
      return uint(100);
    case nv::kSmoothingFieldMaxProfiles:
      return uint(kSmoothingProfiles);
    case nv::kSmoothingFieldProfilePercentFloor:
      v.value_type = nv::kValueDouble;
      v.value.d_val = p.floor_pct;
      return nv::kSuccess;
    case nv::kSmoothingFieldProfileRampUp:
      return uint(p.up_w_per_s * 1000.0);  // mW/s
    case nv::kSmoothingFieldProfileRampDown:
      return uint(p.down_w_per_s * 1000.0);
    case nv::kSmoothingFieldProfileHysteresis:
      return uint(p.hyst_ms);
    case nv::kSmoothingFieldActiveProfile:
      return uint(sm.active);
    case 14:
    case 15:
    case 16:
    case 17:  // ADMIN_OVERRIDE_*: never set
      v.value_type = nv::kValueUnsignedInt;
      v.value.ui_val = 0xFFFFFFFFu;  // NVML_POWER_SMOOTHING_ADMIN_OVERRIDE_NOT_SET
      return nv::kSuccess;
    default:  // PRIV_LVL, IMM_RAMP_DOWN_ENABLED
      return uint(0);
  }
}

// Who may change power smoothing on d (the `writes` rule, as for power limits).
[[maybe_unused]] nv::Return smoothing_writable(const Gpu& d) {
  if (!d.smoothing.supported || d.writes == Writes::kNotSupported) return nv::kErrorNotSupported;
  if (d.writes == Writes::kRoot && ::geteuid() != 0) return nv::kErrorNoPermission;
  return nv::kSuccess;
}

nv::Return do_reasons(const char* call, nv::Device h, unsigned long long* r) {
  int g = 0;
  if (nv::Return rc = enter(call, h, &g); rc != nv::kSuccess) return rc;
  *r = g_gpus[g].reasons;
  return nv::kSuccess;
}

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

#ifndef FAKE_NVML_OLD
FAKE_EXPORT nv::Return nvmlInit_v2() { return do_init(); }
FAKE_EXPORT nv::Return nvmlDeviceGetCount_v2(unsigned* n) { return do_count(n); }
FAKE_EXPORT nv::Return nvmlDeviceGetHandleByIndex_v2(unsigned i, nv::Device* h) {
  return do_handle(i, h);
}
#endif
FAKE_EXPORT nv::Return nvmlInit() { return do_init(); }
FAKE_EXPORT nv::Return nvmlDeviceGetCount(unsigned* n) { return do_count(n); }
FAKE_EXPORT nv::Return nvmlDeviceGetHandleByIndex(unsigned i, nv::Device* h) {
  return do_handle(i, h);
}

// The last shutdown of a process: GPUs without persistence mode lose their limits (the driver
// unloads with no client left).
FAKE_EXPORT nv::Return nvmlShutdown() {
  if (g_init_count <= 0) return nv::kErrorUninitialized;
  if (--g_init_count == 0) {
    bool changed = false;
    for (Gpu& d : g_gpus) {
      if (d.persistence) continue;
      d.limit_w = d.default_w;
      d.enforced_w = std::min(d.default_w, d.clamp_w);
      changed = true;
    }
    if (changed) save_state();
  }
  return nv::kSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(nv::Return rc) {
  return rc == nv::kSuccess ? "Success" : "fake NVML error";
}

FAKE_EXPORT nv::Return nvmlDeviceGetName(nv::Device h, char* buf, unsigned len) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetName", h, &g); rc != nv::kSuccess) return rc;
  if (!buf || len == 0) return nv::kErrorInvalidArgument;
  if (g_gpus[g].name.size() + 1 > len) return nv::kErrorInsufficientSize;
  std::memcpy(buf, g_gpus[g].name.c_str(), g_gpus[g].name.size() + 1);
  return nv::kSuccess;
}

#ifndef FAKE_NVML_OLD
// A fixed UUID per physical GPU, whatever its index (the old library lacks the call: callers
// fall back).
FAKE_EXPORT nv::Return nvmlDeviceGetUUID(nv::Device h, char* buf, unsigned len) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetUUID", h, &g); rc != nv::kSuccess) return rc;
  const std::string uuid = uuid_of(g);
  if (!buf || len == 0) return nv::kErrorInvalidArgument;
  if (uuid.size() + 1 > len) return nv::kErrorInsufficientSize;
  std::memcpy(buf, uuid.c_str(), uuid.size() + 1);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetFieldValues(nv::Device h, int count, nv::FieldValue* v) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetFieldValues", h, &g); rc != nv::kSuccess) return rc;
  if (count < 0 || (count > 0 && !v)) return nv::kErrorInvalidArgument;
  Gpu& d = g_gpus[g];
  for (int i = 0; i < count; ++i) {  // an averaged read counts toward `lost`
    if (v[i].field_id == nv::kFieldPowerAverage && d.field_average && lost_now(d))
      return nv::kErrorGpuIsLost;
  }
  const unsigned sbase = smoothing_field_base();
  for (int i = 0; i < count; ++i) {
    const bool instant = v[i].field_id == nv::kFieldPowerInstant && d.field_instant;
    const bool average = v[i].field_id == nv::kFieldPowerAverage && d.field_average;
    if (v[i].field_id >= sbase && v[i].field_id < sbase + nv::kSmoothingFieldCount) {
      v[i].nvml_return = smoothing_field(d, v[i].field_id - sbase, v[i]);
    } else if (instant || average) {
      v[i].value_type = nv::kValueUnsignedInt;
      v[i].value.ui_val = next_power_mw(d, average);
      v[i].nvml_return = nv::kSuccess;
    } else {
      v[i].nvml_return = nv::kErrorNotSupported;
    }
  }
  return nv::kSuccess;
}
#endif

FAKE_EXPORT nv::Return nvmlDeviceGetPowerUsage(nv::Device h, unsigned* mw) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetPowerUsage", h, &g); rc != nv::kSuccess) return rc;
  if (lost_now(g_gpus[g])) return nv::kErrorGpuIsLost;
  *mw = next_power_mw(g_gpus[g], true);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetTotalEnergyConsumption(nv::Device h, unsigned long long* mj) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetTotalEnergyConsumption", h, &g); rc != nv::kSuccess)
    return rc;
  Gpu& d = g_gpus[g];
  if (d.energy == Energy::kNone) return nv::kErrorNotSupported;
  if (d.load.on && d.energy == Energy::kCounter) {
    // Published every update period: the integral up to the last update.
    const double t = now_s();
    const double tq = d.base_t + std::floor((t - d.base_t) / d.energy_update_s) * d.energy_update_s;
    *mj = static_cast<unsigned long long>(
        std::llround((d.energy_start_j + energy_total(d, std::max(tq, d.base_t))) * 1000.0));
    return nv::kSuccess;
  }
  const double sign = d.energy == Energy::kBackwards ? -1.0 : 1.0;
  const double j =
      d.energy_start_j + sign * static_cast<double>(d.energy_calls++) * d.energy_step_j;
  *mj = static_cast<unsigned long long>(std::llround(std::max(0.0, j) * 1000.0));
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetEnforcedPowerLimit(nv::Device h, unsigned* mw) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetEnforcedPowerLimit", h, &g); rc != nv::kSuccess)
    return rc;
  *mw = to_mw(g_gpus[g].enforced_w);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetPowerManagementLimitConstraints(nv::Device h, unsigned* lo,
                                                                    unsigned* hi) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetPowerManagementLimitConstraints", h, &g);
      rc != nv::kSuccess)
    return rc;
  *lo = to_mw(g_gpus[g].min_w);
  *hi = to_mw(g_gpus[g].max_w);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetPowerManagementDefaultLimit(nv::Device h, unsigned* mw) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetPowerManagementDefaultLimit", h, &g); rc != nv::kSuccess)
    return rc;
  *mw = to_mw(g_gpus[g].default_w);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceSetPowerManagementLimit(nv::Device h, unsigned mw) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceSetPowerManagementLimit", h, &g); rc != nv::kSuccess)
    return rc;
  Gpu& d = g_gpus[g];
  if (d.writes == Writes::kNotSupported) return nv::kErrorNotSupported;
  if (d.writes == Writes::kRoot && ::geteuid() != 0) return nv::kErrorNoPermission;
  if (mw < to_mw(d.min_w) || mw > to_mw(d.max_w)) return nv::kErrorInvalidArgument;
  d.limit_w = mw / 1000.0;
  set_enforced(d, std::min(d.limit_w, d.clamp_w));
  save_state();
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetPowerManagementLimit(nv::Device h, unsigned* mw) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetPowerManagementLimit", h, &g); rc != nv::kSuccess)
    return rc;
  const Gpu& d = g_gpus[g];
  *mw = to_mw(std::isnan(d.limit_w) ? d.enforced_w : d.limit_w);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetPersistenceMode(nv::Device h, int* mode) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetPersistenceMode", h, &g); rc != nv::kSuccess) return rc;
  if (!mode) return nv::kErrorInvalidArgument;
  *mode = g_gpus[g].persistence ? nv::kFeatureEnabled : nv::kFeatureDisabled;
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetUtilizationRates(nv::Device h, nv::Utilization* u) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetUtilizationRates", h, &g); rc != nv::kSuccess) return rc;
  u->gpu = g_gpus[g].sm_util;
  u->memory = g_gpus[g].mem_util;
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetClockInfo(nv::Device h, int type, unsigned* mhz) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetClockInfo", h, &g); rc != nv::kSuccess) return rc;
  if (type != nv::kClockSm) return nv::kErrorInvalidArgument;  // the only clock we fake
  *mhz = g_gpus[g].clock_mhz;
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetTemperature(nv::Device h, int sensor, unsigned* c) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetTemperature", h, &g); rc != nv::kSuccess) return rc;
  if (sensor != nv::kTemperatureGpu) return nv::kErrorInvalidArgument;
  *c = g_gpus[g].temp_c;
  return nv::kSuccess;
}

#ifndef FAKE_NVML_OLD
FAKE_EXPORT nv::Return nvmlDeviceGetCurrentClocksEventReasons(nv::Device h, unsigned long long* r) {
  return do_reasons("nvmlDeviceGetCurrentClocksEventReasons", h, r);
}
#endif
FAKE_EXPORT nv::Return nvmlDeviceGetCurrentClocksThrottleReasons(nv::Device h,
                                                                 unsigned long long* r) {
  return do_reasons("nvmlDeviceGetCurrentClocksThrottleReasons", h, r);
}

FAKE_EXPORT nv::Return nvmlSystemGetDriverVersion(char* buf, unsigned len) {
  if (nv::Return rc = enter_global("nvmlSystemGetDriverVersion"); rc != nv::kSuccess) return rc;
  if (!buf) return nv::kErrorInvalidArgument;
  if (g_driver_version.size() + 1 > len) return nv::kErrorInsufficientSize;
  std::memcpy(buf, g_driver_version.c_str(), g_driver_version.size() + 1);
  return nv::kSuccess;
}

#ifndef FAKE_NVML_OLD
// Power smoothing (see `smoothing`). Only profile->profileId is read, as NVIDIA documents.
FAKE_EXPORT nv::Return nvmlDevicePowerSmoothingActivatePresetProfile(
    nv::Device h, nv::PowerSmoothingProfile* profile) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDevicePowerSmoothingActivatePresetProfile", h, &g);
      rc != nv::kSuccess)
    return rc;
  if (!profile) return nv::kErrorInvalidArgument;
  Gpu& d = g_gpus[g];
  if (nv::Return rc = smoothing_writable(d); rc != nv::kSuccess) return rc;
  if (profile->profile_id >= kSmoothingProfiles) return nv::kErrorInvalidArgument;
  d.smoothing.active = profile->profile_id;
  d.smoothing.persisted = true;
  save_state();
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDevicePowerSmoothingUpdatePresetProfileParam(
    nv::Device h, nv::PowerSmoothingProfile* profile) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDevicePowerSmoothingUpdatePresetProfileParam", h, &g);
      rc != nv::kSuccess)
    return rc;
  if (!profile) return nv::kErrorInvalidArgument;
  Gpu& d = g_gpus[g];
  if (nv::Return rc = smoothing_writable(d); rc != nv::kSuccess) return rc;
  if (profile->version != nv::kPowerSmoothingProfileV1) return nv::kErrorArgumentVersionMismatch;
  if (profile->profile_id >= kSmoothingProfiles) return nv::kErrorInvalidArgument;
  const double v = profile->value;
  if (!std::isfinite(v) || v < 0) return nv::kErrorInvalidArgument;
  SmoothingProfile& p = d.smoothing.profiles[profile->profile_id];
  switch (profile->param_id) {
    case nv::kSmoothingParamPercentTmpFloor:
      if (v < d.smoothing.min_pct || v > d.smoothing.max_pct || v > 100)
        return nv::kErrorInvalidArgument;
      p.floor_pct = v;
      break;
    case nv::kSmoothingParamRampUpRate:
      p.up_w_per_s = v;
      break;
    case nv::kSmoothingParamRampDownRate:
      p.down_w_per_s = v;
      break;
    case nv::kSmoothingParamRampDownHysteresis:
      p.hyst_ms = v;
      break;
    default:  // 4-7 (CUDA 13.1's header on) are not modelled
      return nv::kErrorInvalidArgument;
  }
  d.smoothing.persisted = true;
  save_state();
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDevicePowerSmoothingSetState(nv::Device h,
                                                        nv::PowerSmoothingState* state) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDevicePowerSmoothingSetState", h, &g); rc != nv::kSuccess)
    return rc;
  if (!state) return nv::kErrorInvalidArgument;
  Gpu& d = g_gpus[g];
  if (nv::Return rc = smoothing_writable(d); rc != nv::kSuccess) return rc;
  // NVIDIA lists no version check for this call; the fake checks it as for the profile call.
  if (state->version != nv::kPowerSmoothingStateV1) return nv::kErrorArgumentVersionMismatch;
  if (state->state != nv::kFeatureDisabled && state->state != nv::kFeatureEnabled)
    return nv::kErrorInvalidArgument;
  d.smoothing.enabled = state->state == nv::kFeatureEnabled;
  d.smoothing.persisted = true;
  save_state();
  return nv::kSuccess;
}
#endif
