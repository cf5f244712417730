#pragma once
// Reading a file named by someone less trusted than the process (a policy path in a controller
// spec sent to the node agent over its API): the path must resolve inside one of a set of
// allowed directories, and only a bounded regular file is ever read.
//
// Contract of read_confined_file(path, dirs, rule):
// - `path` (relative: against the working directory) is refused with InvalidArgument when,
//   lexically (`..` removed, no file system access), it is not strictly inside one of `dirs`
//   (as given or with their symlinks resolved), or when it resolves (weakly_canonical: every
//   symlink of its existing part followed) to a place outside every resolved dir. An outside
//   path is never opened or stat()ed, so the answer says nothing about what exists there.
//   Empty `dirs`: every path is refused.
// - Inside: NotFound when it does not exist; InvalidArgument when it is not a regular file (a
//   FIFO, device, socket or directory is refused before open(), so nothing blocks and no
//   device is touched) or holds more than max_bytes; kIoError when it cannot be read.
// - The file is opened O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY and checked again on
//   the descriptor (fstat S_ISREG, size, and its /proc/self/fd path still inside a dir), so a
//   swap between the check and the open cannot escape or block either. Reading a regular file
//   does not wait on a writer; a hung network file system is the only way a read can stall.
// - Every message names `path` as given and `rule` (e.g. "policy_dirs", the setting that
//   lists the dirs), never the file's contents. Thread-safe; never throws.

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core/text_file.hpp"

namespace fw {

Result<std::string> read_confined_file(const std::string& path,
                                       const std::vector<std::string>& dirs,
                                       const std::string& rule,
                                       size_t max_bytes = kMaxTextFileBytes);

}  // namespace fw
