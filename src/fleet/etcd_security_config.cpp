#include "fleet/etcd_security_config.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fw::fleet {

Result<std::string> read_password_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(path + ": cannot read the password file (" +
                                   std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": the password file is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    std::ostringstream m;
    m << path << ": password file mode is 0" << std::oct << (st.st_mode & 0777)
      << "; group and others must have no access: chmod 600 " << path;
    return Status::InvalidArgument(m.str());
  }
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return Status::InvalidArgument(path + ": cannot read a password line");
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.empty()) return Status::InvalidArgument(path + ": the first line is empty");
  return line;
}

namespace {

Status readable_file(const ConfigNode& n, const std::string& path) {
  std::ifstream f(path);
  if (!f.good()) return n.error(path + ": cannot read (" + std::strerror(errno) + ")");
  return Status::Ok();
}

}  // namespace

Result<EtcdSecurity> parse_etcd_security(const ConfigNode& parent,
                                         const std::vector<std::string>& endpoints) {
  EtcdSecurity s;
  bool https = false;
  for (const auto& e : endpoints) https = https || e.rfind("https://", 0) == 0;
  const ConfigNode tls = parent["etcd_tls"];
  if (tls.defined()) {
    if (!tls.is_map()) return tls.error("expected a map (ca_file, cert_file, key_file)");
    FW_RETURN_IF_ERROR(tls.reject_unknown({"ca_file", "cert_file", "key_file"}));
    if (!https) return tls.error("needs https:// etcd endpoints");
    FW_ASSIGN_OR_RETURN(s.ca_file, tls.get_string("ca_file", ""));
    FW_ASSIGN_OR_RETURN(s.cert_file, tls.get_string("cert_file", ""));
    FW_ASSIGN_OR_RETURN(s.key_file, tls.get_string("key_file", ""));
    if (s.cert_file.empty() != s.key_file.empty()) {
      return s.cert_file.empty() ? tls["cert_file"].error("required with key_file")
                                 : tls["key_file"].error("required with cert_file");
    }
    if (!s.ca_file.empty()) FW_RETURN_IF_ERROR(readable_file(tls["ca_file"], s.ca_file));
    if (!s.cert_file.empty()) FW_RETURN_IF_ERROR(readable_file(tls["cert_file"], s.cert_file));
    if (!s.key_file.empty()) FW_RETURN_IF_ERROR(readable_file(tls["key_file"], s.key_file));
  }
  const ConfigNode auth = parent["etcd_auth"];
  if (auth.defined()) {
    if (!auth.is_map()) return auth.error("expected a map (user, password_file)");
    FW_RETURN_IF_ERROR(auth.reject_unknown({"user", "password_file"}));
    FW_ASSIGN_OR_RETURN(s.user, auth.get_string("user", ""));
    if (s.user.empty()) return auth["user"].error("required (the etcd user)");
    if (!auth.has("password_file")) {
      return auth["password_file"].error("required (a file with the etcd user's password)");
    }
    FW_ASSIGN_OR_RETURN(std::string pw_file, auth.get_string("password_file", ""));
    auto pw = read_password_file(pw_file);
    if (!pw.ok()) return auth["password_file"].error(pw.status().message());
    s.password = std::move(pw).value();
  }
  return s;
}

}  // namespace fw::fleet
