#include "runtime/restore_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/json_int.hpp"
#include "core/text_file.hpp"
#include "telemetry/reading_ranges.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {
namespace {

// The highest preset profile id a restore file may name (NVML has 5, ids 0-4; the device's own
// count is checked when the record is put back: PowerSmoothingActuator::save_with).
constexpr int64_t kMaxSmoothingProfile = 15;

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Status sync_dir(const std::string& path) {
  int d = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return Status::IoError(dir_of(path) + ": cannot open to sync");
  int rc = ::fsync(d);
  ::close(d);
  return rc == 0 ? Status::Ok() : Status::IoError(dir_of(path) + ": fsync failed");
}

// One "smoothing" entry, every field checked (a file that parses but holds settings no device
// could take is refused whole, as an impossible cap is).
Result<SavedSmoothing> smoothing_entry(const nlohmann::json& e, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(path + ": restore file: smoothing: " + what);
  };
  if (!e.is_object()) return bad("each entry must be an object");
  int64_t gpu = 0;
  if (!e.contains("gpu") || !json_int_in(e["gpu"], 0, kMaxGpuIndex, gpu)) {
    return bad("gpu: an integer in 0.." + std::to_string(kMaxGpuIndex));
  }
  const std::string at = "gpu " + std::to_string(gpu) + " ";
  SavedSmoothing s;
  s.gpu = static_cast<int>(gpu);
  if (!e.contains("enabled") || !e["enabled"].is_boolean()) return bad(at + "enabled: a boolean");
  s.settings.enabled = e["enabled"].get<bool>();
  int64_t profile = 0;
  if (!e.contains("profile") || !json_int_in(e["profile"], 0, kMaxSmoothingProfile, profile)) {
    return bad(at + "profile: an integer in 0.." + std::to_string(kMaxSmoothingProfile));
  }
  s.settings.profile = static_cast<int>(profile);
  auto number = [&](const char* key, double hi, double& out) -> Status {
    if (!e.contains(key) || !e[key].is_number()) return bad(at + key + ": a number");
    out = e[key].get<double>();
    if (!(std::isfinite(out) && out >= 0 && out <= hi)) {
      return bad(at + key + " " + e[key].dump() + " out of range [0, " + std::to_string(hi) + "]");
    }
    return Status::Ok();
  };
  double floor_pct = 0;
  FW_RETURN_IF_ERROR(number("floor_pct", 100, floor_pct));
  s.settings.floor_frac_of_tdp = floor_pct / 100;
  const double big = std::numeric_limits<double>::max();
  FW_RETURN_IF_ERROR(number("ramp_up_w_per_s", big, s.settings.ramp_up_w_per_s));
  FW_RETURN_IF_ERROR(number("ramp_down_w_per_s", big, s.settings.ramp_down_w_per_s));
  FW_RETURN_IF_ERROR(number("hysteresis_ms", big, s.settings.ramp_down_hysteresis_ms));
  if (e.contains("uuid")) {
    if (!e["uuid"].is_string() || e["uuid"].get<std::string>().empty()) {
      return bad(at + "uuid: a non-empty string");
    }
    s.uuid = e["uuid"].get<std::string>();
  }
  return s;
}

// The UUID of `gpu` on `plant` where it is a real one ("GPU-…"); empty otherwise.
std::string real_uuid(const NodePlant& plant, int gpu) {
  for (const NodeGpu& g : plant.node_gpus()) {
    if (g.index == gpu && g.uuid.rfind("GPU-", 0) == 0) return g.uuid;
  }
  return "";
}

// resolve_saved_caps for any record with gpu and uuid.
template <class Saved>
Result<std::vector<Saved>> resolve_saved(const NodePlant& plant, const std::vector<Saved>& saved,
                                         std::vector<std::string>* skipped, const char* what) {
  std::vector<Saved> out;
  for (const Saved& c : saved) {
    if (c.uuid.empty()) {
      out.push_back(c);
      continue;
    }
    bool found = false;
    for (const NodeGpu& g : plant.node_gpus()) {
      if (g.uuid != c.uuid) continue;
      Saved moved = c;
      moved.gpu = g.index;
      out.push_back(moved);
      found = true;
    }
    if (found) continue;
    if (!plant.lost_gpus().empty()) {
      if (skipped) {
        skipped->push_back("GPU " + c.uuid + " (index " + std::to_string(c.gpu) +
                           " when saved) is unreachable: skipped");
      }
      continue;
    }
    return Status::NotFound(std::string("restore file: ") + what + "GPU " + c.uuid + " (index " +
                            std::to_string(c.gpu) +
                            " when saved) is not on this node; `flexwatt agent --restore "
                            "--to-default` sets every managed GPU to its default limit");
  }
  return out;
}

}  // namespace

Status write_restore_file(const std::string& path, const RestoreRecord& r) {
  nlohmann::json caps = nlohmann::json::array();
  for (const SavedCap& c : r.caps) {
    nlohmann::json e = {{"gpu", c.gpu}, {"cap_w", c.cap_w}};
    if (!c.uuid.empty()) e["uuid"] = c.uuid;
    caps.push_back(std::move(e));
  }
  nlohmann::json j = {{"format", "flexwatt-restore-1"},
                      {"pid", r.pid},
                      {"backend", r.backend},
                      {"time_unix_s", r.time_unix_s},
                      {"caps", caps}};
  if (!r.smoothing.empty()) {
    nlohmann::json sm = nlohmann::json::array();
    for (const SavedSmoothing& e : r.smoothing) {
      const PowerSmoothingSettings& s = e.settings;
      nlohmann::json o = {{"gpu", e.gpu},
                          {"enabled", s.enabled},
                          {"profile", s.profile},
                          {"floor_pct", 100 * s.floor_frac_of_tdp},
                          {"ramp_up_w_per_s", s.ramp_up_w_per_s},
                          {"ramp_down_w_per_s", s.ramp_down_w_per_s},
                          {"hysteresis_ms", s.ramp_down_hysteresis_ms}};
      if (!e.uuid.empty()) o["uuid"] = e.uuid;
      sm.push_back(std::move(o));
    }
    j["smoothing"] = std::move(sm);
  }
  const std::string text = j.dump(1) + "\n";
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::IoError(tmp + ": write failed");
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::IoError(tmp + ": fsync failed");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::IoError(path + ": rename failed: " + std::strerror(errno));
  }
  return sync_dir(path);
}

Result<std::optional<RestoreRecord>> read_restore_file(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<RestoreRecord>();
    return Status::IoError("restore file: " + text.status().message());
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(path + ": restore file: " + what);
  };
  if (j.is_discarded() || !j.is_object()) return bad("not JSON");
  if (j.value("format", "") != "flexwatt-restore-1") return bad("format: not flexwatt-restore-1");
  if (!j.contains("caps") || !j["caps"].is_array()) return bad("caps: missing");
  RestoreRecord r;
  r.pid = j.value("pid", 0);
  r.backend = j.value("backend", "");
  r.time_unix_s = j.value("time_unix_s", 0.0);
  // Every entry is checked before any is used: a file that parses but holds an impossible cap
  // or a GPU twice is refused whole (restoring the entries that pass would leave the others).
  for (const auto& c : j["caps"]) {
    if (!c.is_object() || !c.contains("gpu") || !c["gpu"].is_number_integer() ||
        !c.contains("cap_w") || !(c["cap_w"].is_number() || c["cap_w"].is_null())) {
      return bad("caps: each entry needs gpu (integer) and cap_w (number, or null for none)");
    }
    // A corrupted 4294967296 must not narrow to GPU 0 and restore the wrong GPU.
    int64_t gpu = 0;
    if (!json_int_in(c["gpu"], 0, kMaxGpuIndex, gpu)) {
      return bad("caps: gpu " + c["gpu"].dump() + " out of range 0.." +
                 std::to_string(kMaxGpuIndex));
    }
    // null: the device had no readable cap when it was saved (NaN is written so): nothing to put
    // back.
    const double cap_w = c["cap_w"].is_null() ? kUnset : c["cap_w"].get<double>();
    if (!std::isnan(cap_w) && !(cap_w > 0 && cap_w <= kMaxGpuPowerW)) {
      return bad("caps: gpu " + std::to_string(gpu) + " cap_w " + c["cap_w"].dump() +
                 " out of range (0, " + std::to_string(static_cast<int>(kMaxGpuPowerW)) + "] W");
    }
    std::string uuid;
    if (c.contains("uuid")) {
      if (!c["uuid"].is_string() || c["uuid"].get<std::string>().empty()) {
        return bad("caps: gpu " + std::to_string(gpu) + " uuid: a non-empty string");
      }
      uuid = c["uuid"].get<std::string>();
    }
    for (const SavedCap& seen : r.caps) {
      if (seen.gpu == gpu) return bad("caps: gpu " + std::to_string(gpu) + " twice");
      if (!uuid.empty() && seen.uuid == uuid) return bad("caps: uuid " + uuid + " twice");
    }
    r.caps.push_back({static_cast<int>(gpu), cap_w, uuid});
  }
  if (j.contains("smoothing")) {
    if (!j["smoothing"].is_array()) return bad("smoothing: not an array");
    for (const auto& e : j["smoothing"]) {
      FW_ASSIGN_OR_RETURN(SavedSmoothing s, smoothing_entry(e, path));
      for (const SavedSmoothing& seen : r.smoothing) {
        if (seen.gpu == s.gpu) return bad("smoothing: gpu " + std::to_string(s.gpu) + " twice");
        if (!s.uuid.empty() && seen.uuid == s.uuid) {
          return bad("smoothing: uuid " + s.uuid + " twice");
        }
      }
      r.smoothing.push_back(std::move(s));
    }
  }
  return std::optional<RestoreRecord>(std::move(r));
}

Status remove_restore_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::IoError(path + ": cannot remove: " + std::strerror(errno));
  }
  return sync_dir(path);
}

std::vector<SavedCap> with_uuids(const NodePlant& plant, std::vector<SavedCap> caps) {
  for (SavedCap& c : caps) {
    if (std::string u = real_uuid(plant, c.gpu); !u.empty()) c.uuid = u;
  }
  return caps;
}

std::vector<SavedSmoothing> with_uuids(const NodePlant& plant, std::vector<SavedSmoothing> s) {
  for (SavedSmoothing& e : s) {
    if (std::string u = real_uuid(plant, e.gpu); !u.empty()) e.uuid = u;
  }
  return s;
}

Result<std::vector<SavedCap>> resolve_saved_caps(const NodePlant& plant,
                                                 const std::vector<SavedCap>& caps,
                                                 std::vector<std::string>* skipped) {
  return resolve_saved(plant, caps, skipped, "");
}

Result<std::vector<SavedSmoothing>> resolve_saved_smoothing(const NodePlant& plant,
                                                            const std::vector<SavedSmoothing>& s,
                                                            std::vector<std::string>* skipped) {
  return resolve_saved(plant, s, skipped, "power smoothing of ");
}

Status restore_caps(PowerCapActuator& act, const std::vector<SavedCap>& caps) {
  Status first;
  for (const SavedCap& c : caps) {
    Status s;
    if (!act.managed(c.gpu)) {
      s = Status::NotFound("restore: GPU " + std::to_string(c.gpu) + " is not managed here");
    } else if (!std::isfinite(c.cap_w)) {
      continue;  // the device had no readable cap: nothing to put back
    } else {
      auto w = act.set(c.gpu, c.cap_w);
      if (!w.ok()) s = w.status();
    }
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace fw
