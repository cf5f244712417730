#pragma once
// Real-time scheduling for the calling thread (the node agent's loop): SCHED_RR at `priority`
// (1..99) so that neither the agent's HTTP workers nor other processes delay its ticks. Needs
// CAP_SYS_NICE (or an RLIMIT_RTPRIO allowance): PermissionDenied otherwise, nothing changed.
// The loop sleeps between ticks, and systemd's watchdog kills a loop that stops ticking.

#include "core/status.hpp"

namespace fw {

// Sets the calling thread to SCHED_RR at `priority`; priority 0 puts it back to SCHED_OTHER.
Status set_thread_realtime(int priority);

}  // namespace fw
