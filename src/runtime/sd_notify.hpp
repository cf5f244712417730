#pragma once
// systemd's notify protocol without libsystemd: one datagram to $NOTIFY_SOCKET ("READY=1",
// "WATCHDOG=1", "STOPPING=1", "STATUS=…"). A leading '@' names an abstract socket.

#include <string>

namespace fw {

// Sends `state`; false when $NOTIFY_SOCKET is unset or the send failed (never throws).
bool sd_notify_send(const std::string& state);
// Half the watchdog period from $WATCHDOG_USEC (when $WATCHDOG_PID is unset or this process),
// in seconds: how often WATCHDOG=1 must be sent. 0 when no watchdog is configured.
double sd_watchdog_interval_s();

}  // namespace fw
