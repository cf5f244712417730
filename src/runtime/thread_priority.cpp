#include "runtime/thread_priority.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <string>

namespace fw {

Status set_thread_realtime(int priority) {
  if (priority < 0 || priority > 99) {
    return Status::InvalidArgument("real-time priority must be in 0..99");
  }
  sched_param p{};
  p.sched_priority = priority;
  const int policy = priority > 0 ? SCHED_RR : SCHED_OTHER;
  const int rc = ::pthread_setschedparam(::pthread_self(), policy, &p);
  if (rc == 0) return Status::Ok();
  const std::string what =
      "SCHED_RR priority " + std::to_string(priority) + ": " + std::strerror(rc);
  return rc == EPERM ? Status::PermissionDenied(what + " (needs CAP_SYS_NICE)")
                     : Status::Internal(what);
}

}  // namespace fw
