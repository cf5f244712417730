#pragma once
// The agent's log: one line on stderr, "flexwatt agent: <msg>" (journald and kubectl logs
// take stderr). Thread-safe as fprintf is: a line is written whole.

#include <string>

namespace fw::agent {

void log_line(const std::string& msg);

}  // namespace fw::agent
