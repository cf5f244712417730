#pragma once
// FatalRestore: what the agent does when it dies of a signal it cannot survive (SIGABRT from a
// failed assertion or a corrupted heap, SIGSEGV, SIGBUS, SIGFPE, SIGILL). The caps it wrote must
// not outlive it, but restoring them needs NVML, locks and memory, none of which a signal
// handler may touch in a process that is falling apart. So the handler does only what is
// async-signal-safe: vfork(2) + execve(2) of a restore command prepared at install time
// (`flexwatt agent ... --restore --lock-wait-s 10`, which waits for the dying process to release
// the node lock, then restores from the restore file), and then lets the signal kill the process
// as it would have (the default action: exit status and core dump as usual).
//
// install() copies `argv` (the restore command; argv[0] is replaced by /proc/self/exe, the
// running binary) into memory the handler owns, then installs the handlers (SA_RESETHAND, so
// a second fault dies at once). Call once, after the restore file exists. uninstall() puts the
// default handlers back (a clean exit restores by itself). Not thread-safe against each other;
// the handler itself is async-signal-safe.

#include <string>
#include <vector>

namespace fw {

class FatalRestore {
 public:
  static void install(const std::vector<std::string>& argv);
  static void uninstall();
  // The signals handled, for tests and docs.
  static const std::vector<int>& signals();
};

}  // namespace fw
