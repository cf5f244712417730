#pragma once
// Test helper: real etcd members (Debian's etcd-server, /usr/bin/etcd, or $FLEXWATT_ETCD) on
// free 127.0.0.1 ports with temporary data dirs. The cluster is killed (SIGKILL, by PID) and
// its dirs removed by the destructor, so also when a test fails; each child also gets
// SIGKILL if the test process dies (PR_SET_PDEATHSIG).

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../require_tool.hpp"  // testing_tools::tool_path
#include "core/status.hpp"
#include "fleet/etcd_client.hpp"

namespace fw::fleet::testing {

// Polls pred every 20 ms until it holds or timeout_s passes; the last answer of pred.
template <typename Pred>
bool eventually(double timeout_s, Pred pred) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(int(timeout_s * 1000));
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// FLEXWATT_ETCD when set (empty when that file does not exist), else /usr/bin/etcd, else empty.
inline std::string etcd_binary() {
  return fw::testing_tools::tool_path("FLEXWATT_ETCD", "/usr/bin/etcd");
}

// n distinct free loopback ports (all held open while choosing so none repeats).
inline std::vector<int> free_ports(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof(a);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ports.push_back(0);
    } else {
      ports.push_back(ntohs(a.sin_port));
    }
    fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

// Client-facing TLS of a test cluster: members serve https with cert_file/key_file and, when
// client_ca_file is set, demand a client certificate from that CA (--client-cert-auth). The
// harness's own health checks present health_cert_file/health_key_file and trust ca_file.
struct EtcdTlsSetup {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  std::string health_cert_file;
  std::string health_key_file;
  int auth_token_ttl_s = 0;  // etcd --auth-token-ttl (0: etcd's default, 300 s)
};

class EtcdCluster {
 public:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
    std::string data_dir;
  };

  // Starts n members and waits until each answers /health true (deadline 20 s).
  static Result<std::unique_ptr<EtcdCluster>> Start(int n, const EtcdTlsSetup* tls = nullptr) {
    const std::string bin = etcd_binary();
    if (bin.empty())
      return Status::Unavailable("etcd binary not found (apt-get install etcd-server)");
    remove_orphaned_dirs();
    std::unique_ptr<EtcdCluster> c(new EtcdCluster());
    if (tls != nullptr) c->tls_ = *tls;
    char tmpl[] = "/tmp/flexwatt-etcd-XXXXXX";
    if (!::mkdtemp(tmpl)) return Status::IoError("mkdtemp failed");
    c->root_ = tmpl;
    if (FILE* f = std::fopen((c->root_ + "/owner.pid").c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
    }
    const auto ports = free_ports(2 * n);
    std::string initial;
    for (int i = 0; i < n; ++i) {
      Member m;
      m.name = "m" + std::to_string(i);
      m.client_port = ports[2 * i];
      m.peer_port = ports[2 * i + 1];
      if (m.client_port == 0 || m.peer_port == 0) return Status::IoError("no free port");
      m.data_dir = c->root_ + "/" + m.name;
      if (!initial.empty()) initial += ",";
      initial += m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
      c->members_.push_back(m);
    }
    c->initial_cluster_ = initial;
    c->bin_ = bin;
    for (int i = 0; i < n; ++i) FW_RETURN_IF_ERROR(c->spawn(i));
    for (int i = 0; i < n; ++i) FW_RETURN_IF_ERROR(c->wait_healthy(i, 20.0));
    return c;
  }

  ~EtcdCluster() {
    for (size_t i = 0; i < members_.size(); ++i) kill_member(static_cast<int>(i));
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  std::string endpoint(int i) const {
    return scheme() + "://127.0.0.1:" + std::to_string(members_[i].client_port);
  }
  std::string scheme() const { return tls_.cert_file.empty() ? "http" : "https"; }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < members_.size(); ++i) out.push_back(endpoint(static_cast<int>(i)));
    return out;
  }
  int size() const { return static_cast<int>(members_.size()); }
  std::string log_tail(int i) const { return members_[i].data_dir + ".log"; }

  // SIGKILL by PID and reap; a no-op for a dead member.
  void kill_member(int i) {
    Member& m = members_[i];
    if (m.pid <= 0) return;
    ::kill(m.pid, SIGKILL);
    int st = 0;
    ::waitpid(m.pid, &st, 0);
    m.pid = -1;
  }

  // Every member killed, its data removed and started again on the same ports as a new,
  // empty cluster (an etcd rebuilt from scratch: revisions start over, leases are gone).
  Status rebuild_empty() {
    for (size_t i = 0; i < members_.size(); ++i) kill_member(static_cast<int>(i));
    std::error_code ec;
    for (const Member& m : members_) std::filesystem::remove_all(m.data_dir, ec);
    ++generation_;
    for (int i = 0; i < size(); ++i) FW_RETURN_IF_ERROR(spawn(i));
    for (int i = 0; i < size(); ++i) FW_RETURN_IF_ERROR(wait_healthy(i, 20.0));
    return Status::Ok();
  }

  // SIGSTOP / SIGCONT of every member (etcd down without losing its data).
  void pause_all(bool stop) {
    for (const Member& m : members_)
      if (m.pid > 0) ::kill(m.pid, stop ? SIGSTOP : SIGCONT);
  }

  bool healthy(int i) const {
    httplib::Client cli(endpoint(i), tls_.health_cert_file, tls_.health_key_file);
    if (!tls_.ca_file.empty()) cli.set_ca_cert_path(tls_.ca_file);
    cli.set_connection_timeout(0, 300000);
    cli.set_read_timeout(1, 0);
    auto r = cli.Get("/health");
    return r && r->status == 200 && r->body.find("\"true\"") != std::string::npos;
  }

  Status wait_healthy(int i, double timeout_s) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int(timeout_s * 1000));
    while (std::chrono::steady_clock::now() < deadline) {
      if (healthy(i)) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::Unavailable("etcd member " + members_[i].name + " not healthy; log " +
                               log_tail(i));
  }

 private:
  EtcdCluster() = default;

  // Data dirs left by a test process that was killed (its destructor never ran): those whose
  // owner.pid names a process that no longer exists.
  static void remove_orphaned_dirs() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
      if (e.path().filename().string().rfind("flexwatt-etcd-", 0) != 0) continue;
      int pid = 0;
      if (FILE* f = std::fopen((e.path() / "owner.pid").c_str(), "r")) {
        if (std::fscanf(f, "%d", &pid) != 1) pid = 0;
        std::fclose(f);
      }
      if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
        std::filesystem::remove_all(e.path(), ec);
    }
  }

  Status spawn(int i) {
    Member& m = members_[i];
    const std::string curl = endpoint(i);
    const std::string purl = "http://127.0.0.1:" + std::to_string(m.peer_port);
    std::vector<std::string> args = {
        bin_,
        "--name=" + m.name,
        "--data-dir=" + m.data_dir,
        "--listen-client-urls=" + curl,
        "--advertise-client-urls=" + curl,
        "--listen-peer-urls=" + purl,
        "--initial-advertise-peer-urls=" + purl,
        "--initial-cluster=" + initial_cluster_,
        "--initial-cluster-state=new",
        "--initial-cluster-token=" + root_ + "-" + std::to_string(generation_),
        "--logger=zap",
        "--log-level=warn",
        "--unsafe-no-fsync"};
    if (!tls_.cert_file.empty()) {
      args.push_back("--cert-file=" + tls_.cert_file);
      args.push_back("--key-file=" + tls_.key_file);
    }
    if (!tls_.client_ca_file.empty()) {
      args.push_back("--client-cert-auth");
      args.push_back("--trusted-ca-file=" + tls_.client_ca_file);
    }
    if (tls_.auth_token_ttl_s > 0) {
      args.push_back("--auth-token-ttl=" + std::to_string(tls_.auth_token_ttl_s));
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = m.data_dir + ".log";
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return Status::IoError("fork failed");
    if (pid == 0) {  // child: async-signal-safe calls only until exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    m.pid = pid;
    return Status::Ok();
  }

  std::string bin_;
  std::string root_;
  std::string initial_cluster_;
  std::vector<Member> members_;
  int generation_ = 0;  // bumped by rebuild_empty(): a new cluster token
  EtcdTlsSetup tls_;
};

// Client options for tests against a local cluster: short timeouts and back-off, so a test
// that stops members sees errors in seconds.
inline EtcdClientOptions fast_client_options(const EtcdCluster& c) {
  EtcdClientOptions o;
  o.endpoints = c.endpoints();
  o.request_timeout_s = 1;
  o.call_timeout_s = 2;
  o.max_attempts = 4;
  o.backoff_initial_s = 0.02;
  o.backoff_max_s = 0.2;
  return o;
}

}  // namespace fw::fleet::testing
