#include "agent/agent_log.hpp"

#include <cstdio>

namespace fw::agent {

void log_line(const std::string& msg) { std::fprintf(stderr, "flexwatt agent: %s\n", msg.c_str()); }

}  // namespace fw::agent
