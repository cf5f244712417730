#pragma once
// NodeLifecycle: the node agent's lifecycle and restore, one job: whatever happens, the node is
// left with the caps it was found with.
//   acquire(): takes the node lock (its directory created; one writer per node: a second
//     agent is refused, Unavailable).
//   open_plant(jobs): opens the NodePlant of cfg.plant.
//   take_caps(share_w): before any other cap write (skipped read_only: nothing is ever
//     written). First the write check: every managed GPU's cap in force is read and written
//     back unchanged; a GPU that refuses (no root or CAP_SYS_ADMIN, a container, a GPU without
//     power limits) fails the start with InvalidArgument (exit 2, as a config error: the way
//     out is `read_only: true` or the privilege), one line naming the GPU, the NVML call, the
//     error and the way out. Nothing has changed then: a restore file is neither written nor
//     removed (one left by a run that died stays as it was). Each GPU whose persistence mode is
//     off is logged (its limits are lost when the driver unloads; not an error).
//     A restore file left by a run that died holds the caps that run found: they stay
//     what every exit puts back, and they are put in force now only when they sum within the
//     node's share `share_w`; else the share's caps (agent_tick.hpp safe_command) are, so a
//     restarted node never draws above its share while its loop starts. Then the caps to put
//     back are saved, the plant adopts the caps in force as its defaults, and the restore file
//     is written (atomic, fsync'ed). A corrupt file is InvalidArgument naming --to-default.
//     Power smoothing the same way (NodePlant::save_smoothing): the settings found on every
//     smoothing-capable GPU go into the restore file; a dead run's recorded settings are put
//     back at once and kept as what every exit puts back.
//   restore(): once: writes the saved caps back, then the power smoothing the run changed
//     (NodePlant::restore_smoothing), and removes the restore file; a failure of either keeps
//     the file (for `flexwatt agent --restore`).
// The loop's thread (start and shutdown) only.

#include <memory>
#include <string>

#include "agent/agent_config.hpp"
#include "core/status.hpp"
#include "runtime/node_lock.hpp"
#include "runtime/node_plant.hpp"

namespace fw::agent {

class NodeLifecycle {
 public:
  explicit NodeLifecycle(const AgentConfig& cfg) : cfg_(cfg) {}

  Status acquire();
  Status open_plant(JobChannel* jobs);
  Status take_caps(double share_w);
  Status restore();
  bool saved() const { return saved_; }
  bool restored() const { return restored_; }
  NodePlant& plant() { return *plant_; }
  const NodePlant& plant() const { return *plant_; }

 private:
  const AgentConfig& cfg_;
  std::unique_ptr<NodeLock> lock_;
  std::unique_ptr<NodePlant> plant_;
  bool saved_ = false, restored_ = false;
};

// How `flexwatt agent --restore` runs.
struct RestoreOptions {
  // Ignore the restore file's contents (a corrupt one included) and set every managed GPU to
  // the driver's default power limit, then remove the file (--to-default).
  bool to_default = false;
  // Wait this long for the node lock (the restore helper of a dying agent waits for it).
  double lock_wait_s = 0;
};

// `flexwatt agent --restore`: if cfg.restore_file exists, opens the backend's cap writer and
// writes the saved caps back, then the saved power smoothing of every GPU the file lists, then
// removes the file. --to-default sets the caps only: NVML documents no default power smoothing
// settings to reset to, so the smoothing stays as it is. Ok (and "nothing to restore" in *what)
// when there is no file. Does not take the node lock when a live agent holds it: Unavailable.
// A corrupt file is InvalidArgument naming --to-default.
Status restore_from_file(const AgentConfig& cfg, std::string* what, const RestoreOptions& opt = {});

}  // namespace fw::agent
