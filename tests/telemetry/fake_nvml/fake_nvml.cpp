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
//   power G W [W ...]               power in watts; each successful power read takes the next
//                                   value, cycling (one value: constant)
//   field_instant G yes|no          whether field 186 (instant power) is supported (default yes)
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
//                                   every call on it returns NVML_ERROR_GPU_IS_LOST
//   fail CALL CODE [gpu=G] [after=N] [times=K]
//                                   CALL (an NVML function name, or '*') returns CODE
//                                   (gpu_lost | not_supported | no_permission | invalid_argument
//                                   | unknown | a number) after N successful calls (default 0),
//                                   K times (default: from then on), then succeeds again
//
// FAKE_NVML_STATE=FILE (optional) makes the management limits outlive the process, like a real
// driver's: lines "G LIMIT_W" read at nvmlInit (after the script) and rewritten on every set.

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

#include "hw/nvml/nvml_api.hpp"

namespace {
namespace nv = fw::nvml;

enum class Energy { kCounter, kNone, kBackwards };

struct Gpu {
  std::string name = "Fake NVIDIA GPU";
  std::vector<double> power_w = {300.0};
  size_t power_index = 0;
  bool field_instant = true;
  Energy energy = Energy::kCounter;
  double energy_start_j = 1000.0, energy_step_j = 30.0;
  long energy_calls = 0;
  double min_w = 200, max_w = 700, default_w = 700, enforced_w = 700;
  double clamp_w = std::numeric_limits<double>::infinity();
  double limit_w = std::numeric_limits<double>::quiet_NaN();  // NaN: as enforced_w
  unsigned sm_util = 50, mem_util = 25, clock_mhz = 1500, temp_c = 60;
  unsigned long long reasons = 0;
  bool persistence = true;
  long lost_after_reads = -1;
  long reads = 0;
  bool lost = false;
};

struct Fail {
  std::string call;
  nv::Return rc = nv::kErrorUnknown;
  int gpu = -1;
  long after = 0;
  long times = -1;          // failures before the call recovers; -1: never recovers
  std::vector<long> calls;  // per GPU (index gpus.size() for calls not tied to a GPU)
};

int g_init_count = 0;
std::vector<Gpu> g_gpus;
std::vector<Fail> g_fails;

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

bool load_script(const char* path) {
  g_gpus.assign(1, Gpu{});
  g_fails.clear();
  if (!path || !*path) return true;
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
      } else if (cmd == "power") {
        d.power_w.clear();
        for (size_t i = 2; i < tok.size(); ++i)
          d.power_w.push_back(std::strtod(tok[i].c_str(), nullptr));
        if (d.power_w.empty()) return bad("power needs values");
      } else if (cmd == "field_instant") {
        if (tok.size() != 3) return bad("field_instant G yes|no");
        d.field_instant = tok[2] == "yes";
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
  return true;
}

// Index of a device handle, or -1.
int index_of(nv::Device h) {
  const auto i = static_cast<long>(reinterpret_cast<uintptr_t>(h)) - 1;
  return (i >= 0 && i < static_cast<long>(g_gpus.size())) ? static_cast<int>(i) : -1;
}

// Common entry checks for a device call: initialised, valid handle, lost GPU, injected failure.
nv::Return enter(const char* call, nv::Device h, int* gpu_out) {
  if (g_init_count <= 0) return nv::kErrorUninitialized;
  const int gpu = index_of(h);
  if (gpu < 0) return nv::kErrorInvalidArgument;
  if (gpu_out) *gpu_out = gpu;
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
  for (Fail& f : g_fails) {
    if ((f.call == call || f.call == "*") && f.gpu < 0) {
      const long k = f.calls[g_gpus.size()]++;
      if (k >= f.after && (f.times < 0 || k < f.after + f.times)) return f.rc;
    }
  }
  return nv::kSuccess;
}

unsigned to_mw(double w) { return static_cast<unsigned>(std::llround(w * 1000.0)); }

// A power read of a lost GPU: it falls off the bus on read number lost_after_reads + 1.
bool lost_now(Gpu& d) {
  if (d.lost_after_reads >= 0 && d.reads >= d.lost_after_reads) d.lost = true;
  return d.lost;
}

// The next power value of a GPU, in mW; advances its sequence and read count.
unsigned next_power_mw(Gpu& d) {
  const double w = d.power_w[d.power_index % d.power_w.size()];
  ++d.power_index;
  ++d.reads;
  return to_mw(w);
}

void load_state() {
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (!path) return;
  std::ifstream in(path);
  int g = 0;
  double w = 0;
  while (in >> g >> w) {
    if (g < 0 || g >= static_cast<int>(g_gpus.size())) continue;
    g_gpus[g].limit_w = w;
    g_gpus[g].enforced_w = std::min(w, g_gpus[g].clamp_w);
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
}

nv::Return do_init() {
  if (g_init_count == 0 && !load_script(std::getenv("FAKE_NVML_SCRIPT"))) {
    return nv::kErrorUnknown;
  }
  if (g_init_count == 0) load_state();
  ++g_init_count;
  return nv::kSuccess;
}

nv::Return do_count(unsigned* n) {
  if (nv::Return rc = enter_global("nvmlDeviceGetCount"); rc != nv::kSuccess) return rc;
  if (!n) return nv::kErrorInvalidArgument;
  *n = static_cast<unsigned>(g_gpus.size());
  return nv::kSuccess;
}

nv::Return do_handle(unsigned i, nv::Device* h) {
  if (nv::Return rc = enter_global("nvmlDeviceGetHandleByIndex"); rc != nv::kSuccess) return rc;
  if (!h || i >= g_gpus.size()) return nv::kErrorInvalidArgument;
  *h = reinterpret_cast<nv::Device>(static_cast<uintptr_t>(i) + 1);
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

FAKE_EXPORT nv::Return nvmlShutdown() {
  if (g_init_count <= 0) return nv::kErrorUninitialized;
  --g_init_count;
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
// A fixed UUID per index (the old library lacks the call: callers fall back).
FAKE_EXPORT nv::Return nvmlDeviceGetUUID(nv::Device h, char* buf, unsigned len) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetUUID", h, &g); rc != nv::kSuccess) return rc;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-fa4e0000-0000-4000-8000-%012d", g);
  if (!buf || len == 0) return nv::kErrorInvalidArgument;
  if (std::strlen(uuid) + 1 > len) return nv::kErrorInsufficientSize;
  std::memcpy(buf, uuid, std::strlen(uuid) + 1);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetFieldValues(nv::Device h, int count, nv::FieldValue* v) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetFieldValues", h, &g); rc != nv::kSuccess) return rc;
  if (count < 0 || (count > 0 && !v)) return nv::kErrorInvalidArgument;
  Gpu& d = g_gpus[g];
  if (lost_now(d)) return nv::kErrorGpuIsLost;
  for (int i = 0; i < count; ++i) {
    if (v[i].field_id == nv::kFieldPowerInstant && d.field_instant) {
      v[i].value_type = nv::kValueUnsignedInt;
      v[i].value.ui_val = next_power_mw(d);
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
  *mw = next_power_mw(g_gpus[g]);
  return nv::kSuccess;
}

FAKE_EXPORT nv::Return nvmlDeviceGetTotalEnergyConsumption(nv::Device h, unsigned long long* mj) {
  int g = 0;
  if (nv::Return rc = enter("nvmlDeviceGetTotalEnergyConsumption", h, &g); rc != nv::kSuccess)
    return rc;
  Gpu& d = g_gpus[g];
  if (d.energy == Energy::kNone) return nv::kErrorNotSupported;
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
  if (mw < to_mw(d.min_w) || mw > to_mw(d.max_w)) return nv::kErrorInvalidArgument;
  d.limit_w = mw / 1000.0;
  d.enforced_w = std::min(d.limit_w, d.clamp_w);
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
