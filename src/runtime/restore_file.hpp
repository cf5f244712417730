#pragma once
// The restore file: the caps found on every managed GPU before the agent's first cap write,
// kept on disk so that a crash (kill -9, a hung loop killed by the watchdog) still leaves a way
// back. Written atomically: a temporary file in the same directory, fsync, rename, fsync of the
// directory, so a reader sees the old file or the whole new one, never a torn one.
//
// Semantics (docs/agent.md "Restore"): the agent writes the file before its first cap write and
// removes it after a clean restore. A file found at start-up means the previous run died
// without restoring; the agent restores it first. `flexwatt agent --restore` does the same from
// systemd's ExecStopPost=.
//
// The file also holds the power smoothing settings found on every smoothing-capable GPU
// (key "smoothing", absent when there is none: a file of an older flexwatt or a node without
// smoothing reads the same), so a crash leaves a way back for them too.

#include <optional>
#include <string>
#include <vector>

#include "actuation/power_cap_actuator.hpp"
#include "core/status.hpp"
#include "runtime/node_plant.hpp"

namespace fw {

struct RestoreRecord {
  int pid = 0;             // the agent that wrote it
  std::string backend;     // "nvml", "fake-nvml", "sim:…"
  double time_unix_s = 0;  // when it was written
  std::vector<SavedCap> caps;
  std::vector<SavedSmoothing> smoothing = {};  // the floor a fraction here, in percent in the file
};

Status write_restore_file(const std::string& path, const RestoreRecord& r);
// nullopt when the file does not exist; InvalidArgument naming the path for a bad file.
Result<std::optional<RestoreRecord>> read_restore_file(const std::string& path);
// Removes the file and syncs its directory; Ok when it does not exist.
Status remove_restore_file(const std::string& path);
// The caps with each GPU's NVML UUID filled in from the plant (real "GPU-…" UUIDs only): a
// restore file is keyed by UUID, because NVML's index order may change across reboots.
std::vector<SavedCap> with_uuids(const NodePlant& plant, std::vector<SavedCap> caps);
// Maps saved entries to this run's GPUs: an entry with a UUID goes to the GPU that has that UUID
// now (an index shuffle between runs restores the right GPU); one without keeps its index. An
// entry whose UUID no live GPU has is skipped, and named in *skipped, when the plant lost a GPU
// (it is the lost one, whose reset will put its default back); otherwise NotFound naming it.
Result<std::vector<SavedCap>> resolve_saved_caps(const NodePlant& plant,
                                                 const std::vector<SavedCap>& caps,
                                                 std::vector<std::string>* skipped);
// with_uuids and resolve_saved_caps for power smoothing records.
std::vector<SavedSmoothing> with_uuids(const NodePlant& plant, std::vector<SavedSmoothing> s);
Result<std::vector<SavedSmoothing>> resolve_saved_smoothing(const NodePlant& plant,
                                                            const std::vector<SavedSmoothing>& s,
                                                            std::vector<std::string>* skipped);
// Writes every saved cap back through `act` (validated by set()), trying every GPU; a GPU the
// actuator does not manage is an error. Returns the first failure.
Status restore_caps(PowerCapActuator& act, const std::vector<SavedCap>& caps);

}  // namespace fw
