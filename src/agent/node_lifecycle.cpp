#include "agent/node_lifecycle.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "agent/agent_log.hpp"
#include "agent/agent_tick.hpp"
#include "core/format.hpp"
#include "runtime/restore_file.hpp"

namespace fw::agent {
namespace {

// A restore file that cannot be read (truncated by a crash mid-write, edited by hand): the caps
// it saved are unknown, so neither a start nor --restore can go on by themselves. Names the way
// out; an I/O error (not a corrupt file) is returned as it is.
Status corrupt_restore_file_status(const Status& s) {
  if (s.code() != StatusCode::kInvalidArgument) return s;
  return Status::InvalidArgument(
      s.message() +
      "; the caps it saved are unknown. Check the GPUs' caps (nvidia-smi -q -d POWER), then run "
      "`flexwatt agent --config <this config> --restore --to-default` to set every managed GPU "
      "to its default power limit and remove the file");
}

// The caps a restart puts in force: the saved ones when they sum within share_w, else the
// share's (safe_command's caps, on the managed GPUs).
bool within_share(const std::vector<SavedCap>& saved, double share_w) {
  double sum_w = 0;
  for (const SavedCap& c : saved) sum_w += c.cap_w;
  return !(sum_w > share_w + 1e-9);
}

std::vector<SavedCap> share_caps(const AgentConfig& cfg, NodePlant& plant, double share_w) {
  const Command safe = safe_command(cfg, plant.info(), share_w);
  const std::vector<int>& managed = plant.caps().gpus();
  std::vector<SavedCap> out;
  for (size_t g = 0; g < managed.size() && g < safe.power_cap_w.size(); ++g) {
    out.push_back({managed[g], safe.power_cap_w[g]});
  }
  return out;
}

// The write check of take_caps(): each managed GPU's cap in force written back as it is (no
// change to the node), so a node where caps cannot be written refuses control at start instead
// of running without a cap in force. InvalidArgument (exit 2) naming the GPU, the call, the
// error and the way out; a failed read is returned as it is (save() would fail on it too).
Status check_cap_writes(PowerCapActuator& caps) {
  for (int g : caps.gpus()) {
    FW_ASSIGN_OR_RETURN(const double in_force_w, caps.cap_w(g));
    Result<CapWrite> w = caps.set(g, in_force_w);
    if (w.ok()) continue;
    return Status::InvalidArgument(
        "start-up cap write check failed: " + w.status().message() + " (writing back the " +
        format_g(in_force_w) +
        " W in force); the agent cannot cap this GPU: run it as root or with CAP_SYS_ADMIN "
        "(in a container: with the GPU's power controls), leave a GPU that takes no power "
        "limit out of `gpus`, or set `read_only: true` to measure and serve without writing");
  }
  return Status::Ok();
}

// Persistence mode off: the driver may unload between clients, and the limits set go with it.
void warn_persistence_off(NodePlant& plant) {
  PowerCapActuator& caps = plant.caps();
  for (int g : caps.gpus()) {
    if (caps.persistence_mode(g) != PersistenceMode::kOff) continue;
    log_line("GPU " + std::to_string(g) +
             ": persistence mode is off: the power limits the agent sets are lost when the "
             "driver unloads (turn it on with nvidia-persistenced or `nvidia-smi -pm 1`)");
  }
}

}  // namespace

Status NodeLifecycle::acquire() {
  for (const std::string& f : {cfg_.lock_file, cfg_.restore_file}) {
    std::error_code ec;  // a missing /run/flexwatt is created; a failure shows up just below
    std::filesystem::create_directories(std::filesystem::path(f).parent_path(), ec);
  }
  auto lock = NodeLock::acquire(cfg_.lock_file);
  if (!lock.ok()) return lock.status();
  lock_ = std::move(lock).value();
  return Status::Ok();
}

Status NodeLifecycle::open_plant(JobChannel* jobs) {
  auto p = NodePlant::open(cfg_.plant, jobs);
  if (!p.ok()) return p.status();
  plant_ = std::move(p).value();
  return Status::Ok();
}

Status NodeLifecycle::take_caps(double share_w) {
  if (cfg_.read_only) return Status::Ok();  // nothing will be written: nothing to save
  auto leftover = read_restore_file(cfg_.restore_file);
  if (!leftover.ok()) return corrupt_restore_file_status(leftover.status());
  // Before the first write that changes a cap: a failure here leaves the node and any restore
  // file as they were.
  FW_RETURN_IF_ERROR(check_cap_writes(plant_->caps()));
  warn_persistence_off(*plant_);
  for (const LostGpu& l : plant_->lost_gpus()) {
    log_line("GPU " + std::to_string(l.index) +
             " is unreachable and left out of control: " + l.reason);
  }
  std::vector<SavedCap> kept;
  std::vector<SavedSmoothing> kept_smoothing;
  if (leftover.value()) {
    RestoreRecord r = *leftover.value();
    std::vector<std::string> skipped;
    auto resolved = resolve_saved_caps(*plant_, r.caps, &skipped);
    if (!resolved.ok()) {
      return Status(resolved.status().code(),
                    "restoring the caps of the previous run: " + resolved.status().message());
    }
    for (const std::string& s : skipped) log_line("restore file " + cfg_.restore_file + ": " + s);
    r.caps = std::move(resolved).value();
    kept = r.caps;
    const bool within = within_share(r.caps, share_w);
    const std::vector<SavedCap> now = within ? r.caps : share_caps(cfg_, *plant_, share_w);
    log_line("restore file " + cfg_.restore_file + " left by pid " + std::to_string(r.pid) +
             " (unclean exit): " +
             (within ? "restoring " + std::to_string(r.caps.size()) + " caps"
                     : "its caps sum above the node's share (" + std::to_string(share_w) +
                           " W): the share's caps until the loop decides"));
    Status s = fw::restore_caps(plant_->caps(), now);
    if (!s.ok()) return Status(s.code(), "restoring the caps of the previous run: " + s.message());
    // A lost GPU's skip is logged above with its cap.
    auto smoothing = resolve_saved_smoothing(*plant_, r.smoothing, nullptr);
    if (!smoothing.ok()) {
      return Status(
          smoothing.status().code(),
          "restoring the power smoothing of the previous run: " + smoothing.status().message());
    }
    kept_smoothing = std::move(smoothing).value();
    // The file stays until the new one replaces it (atomically, below): a start that fails from
    // here on leaves the only record of the caps found before the first write in place.
  }
  // Save before any write: the caps found (or the crashed run's, kept) are what every exit path
  // puts back; the caps in force now are what GPUs no controller sets are held at. The same for
  // power smoothing, whose kept settings are put in force at once (no controller holds them).
  FW_RETURN_IF_ERROR(plant_->caps().save_with(kept));
  FW_RETURN_IF_ERROR(plant_->save_smoothing(kept_smoothing));
  if (!kept_smoothing.empty()) {
    Status s = plant_->restore_smoothing();
    if (!s.ok()) {
      return Status(s.code(), "restoring the power smoothing of the previous run: " + s.message());
    }
    log_line("restore file " + cfg_.restore_file + ": restored the power smoothing of " +
             std::to_string(kept_smoothing.size()) + " GPUs");
  }
  plant_->adopt_caps_in_force();
  RestoreRecord rec{static_cast<int>(::getpid()), cfg_.plant.backend, unix_now_s(),
                    with_uuids(*plant_, plant_->caps().saved()),
                    with_uuids(*plant_, plant_->saved_smoothing())};
  FW_RETURN_IF_ERROR(write_restore_file(cfg_.restore_file, rec));
  saved_ = true;
  return Status::Ok();
}

Status NodeLifecycle::restore() {
  if (!saved_ || restored_) return Status::Ok();
  restored_ = true;
  // The caps first (the budget), then the power smoothing the run changed.
  Status s = plant_->caps().restore();
  const Status smoothing = plant_->restore_smoothing();
  if (s.ok() && !smoothing.ok()) s = smoothing.with_context("power smoothing");
  if (!s.ok()) {
    log_line("restore failed (the restore file is kept for --restore): " + s.message());
    return s;
  }
  log_line("caps restored");
  return remove_restore_file(cfg_.restore_file);
}

Status restore_from_file(const AgentConfig& cfg, std::string* what, const RestoreOptions& opt) {
  std::error_code ec;  // no /run/flexwatt yet (a fresh boot): the lock's directory is created
  std::filesystem::create_directories(std::filesystem::path(cfg.lock_file).parent_path(), ec);
  auto lock = NodeLock::acquire(cfg.lock_file, opt.lock_wait_s);
  if (!lock.ok()) return lock.status();
  auto rec = read_restore_file(cfg.restore_file);
  if (!rec.ok() && !opt.to_default) return corrupt_restore_file_status(rec.status());
  if (rec.ok() && !rec.value() && !opt.to_default) {
    if (what) *what = "nothing to restore (" + cfg.restore_file + " absent)";
    return Status::Ok();
  }
  auto plant = NodePlant::open(cfg.plant, nullptr);
  if (!plant.ok()) return plant.status();
  PowerCapActuator& caps = plant.value()->caps();
  if (opt.to_default) {
    std::vector<SavedCap> defaults;
    for (int g : caps.gpus()) defaults.push_back({g, caps.constraints(g).default_w});
    FW_RETURN_IF_ERROR(restore_caps(caps, defaults));
    if (what) {
      *what = "set " + std::to_string(defaults.size()) + " GPUs to their default power limit" +
              (rec.ok() && !rec.value() ? "" : "; removed " + cfg.restore_file);
    }
    return remove_restore_file(cfg.restore_file);
  }
  std::vector<std::string> skipped;
  FW_ASSIGN_OR_RETURN(std::vector<SavedCap> resolved,
                      resolve_saved_caps(*plant.value(), rec.value()->caps, &skipped));
  FW_RETURN_IF_ERROR(restore_caps(caps, resolved));
  // The power smoothing found: put back on every GPU the file names (which of them the dead run
  // changed is not known; writing back settings in force changes nothing).
  std::vector<std::string> skipped_smoothing;  // the same lost GPUs as the caps': not repeated
  FW_ASSIGN_OR_RETURN(
      std::vector<SavedSmoothing> smoothing,
      resolve_saved_smoothing(*plant.value(), rec.value()->smoothing, &skipped_smoothing));
  for (const std::string& s : skipped_smoothing) {
    if (std::find(skipped.begin(), skipped.end(), s) == skipped.end()) skipped.push_back(s);
  }
  FW_RETURN_IF_ERROR(plant.value()->save_smoothing(smoothing).with_context("power smoothing"));
  FW_RETURN_IF_ERROR(plant.value()->restore_smoothing().with_context("power smoothing"));
  if (what) {
    *what = "restored " + std::to_string(resolved.size()) + " caps";
    if (!smoothing.empty()) {
      *what += " and the power smoothing of " + std::to_string(smoothing.size()) + " GPUs";
    }
    *what += " saved by pid " + std::to_string(rec.value()->pid);
    for (const std::string& s : skipped) *what += "; " + s;
  }
  return remove_restore_file(cfg.restore_file);
}

}  // namespace fw::agent
