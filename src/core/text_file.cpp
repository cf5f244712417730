#include "core/text_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace fw {

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(path + ": is a directory, not a file");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IoError("cannot read " + path + ": " + std::strerror(err));
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (text.size() + n > max_bytes) {
      std::fclose(f);
      return Status::InvalidArgument(path + ": more than " + std::to_string(max_bytes >> 20) +
                                     " MiB: not an input flexwatt reads (a device, or the wrong "
                                     "file?)");
    }
    text.append(buf, n);
  }
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) return Status::IoError("cannot read " + path + ": " + std::strerror(err));
  return text;
}

Status write_text_file(const std::string& path, std::string_view text) {
  if (path.empty()) return Status::InvalidArgument("an output file name is empty");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return {StatusCode::kIoError, "cannot write " + path + ": " + std::strerror(errno)};
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return {StatusCode::kIoError, "cannot write " + path + ": " + why};
  }
  return Status::Ok();
}

Status check_writable_parent(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  if (::access(dir.c_str(), W_OK) != 0) {
    return {StatusCode::kIoError, "cannot write " + path + ": " + std::strerror(errno)};
  }
  return Status::Ok();
}

}  // namespace fw
