#!/usr/bin/env python3
"""Fault campaign of a site on one machine (loopback only, bounded, stops itself).

A 3-member etcd (temporary data dirs, --unsafe-no-fsync) serving only TLS with client
certificates and etcd's own auth on (certificates from scripts/etcd_test_pki.sh; per-node
roles as docs/fleet.md "Security" gives them: each agent writes only its own record and off
marker, the coordinators assignments, the election, off markers and the grid schedule; peer
traffic stays plain HTTP on loopback), two `flexwatt coordinator`s with a token file, and N
`flexwatt agent`s on the simulator (scenario grpo-7b-a100, one GPU each) following them. One
experiment after the other:

  leader_kill          SIGKILL of the leading coordinator (restarted after recovery)
  etcd_leader_kill     SIGKILL of etcd's raft leader (restarted after recovery)
  etcd_down_20s        every etcd member stopped (SIGSTOP) for 20 s
  leader_sigstop_15s   the leading coordinator stopped (SIGSTOP) for 15 s
  agents_restarted     half the agents SIGKILLed, started again 2 s later
  etcd_rebuilt_empty   every etcd member killed, its data removed, a new empty cluster (its
                       users and roles set up again, as an operator restoring it would)
  forged_assignment    puts of an assignment with a huge revision: without credentials,
                       without a client certificate, with another node's credentials (all
                       refused by etcd), then with root's (accepted: the fencing refuses it)
  zero_w_target        a 0 W grid target for 10 s: every node at its floor
  future_during_active a future event announced during an active one
  openadr_multi        an OpenADR event of two intervals (70 %, then 50 % of the budget)
  unauthenticated      writes without a token, or below control, to coordinators and agents,
                       and the forged etcd puts above: every one must be refused

Every 0.5 s it samples each agent's /v1/status (node power, budget, budget source) and the
leading coordinator's /v1/grid/status (effective budget). The report (report.json and a
table on stdout): site 30 s means against the effective budget (sliding, one per sample),
per experiment whether it recovered and how long it took (all agents back on "coordinator"
after the fault ended), agents on a safe share at the end, unauthenticated writes accepted.
Exit 0 when every check holds, 1 otherwise, 2 on bad usage. Simulated GPUs: the figures are
the protocol's on this machine, not a real site's.
"""
import argparse
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SITE = "faults"


def now():
    return time.time()


class Campaign:
    def __init__(self, args):
        self.a = args
        self.root = tempfile.mkdtemp(prefix="flexwatt-faults-")
        self.procs = {}  # name -> Popen
        self.samples = []  # (t, site_w, effective_w, sources, budgets)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.results = []
        self.unauth_accepted = 0
        self.unauth_tried = 0
        self.token = "ctl-" + "".join(random.choice("abcdef0123456789") for _ in range(32))
        self.read_token = "rd-" + "".join(random.choice("abcdef0123456789") for _ in range(32))
        base = 20000 + random.randrange(10000)
        self.etcd_ports = [(base + 2 * i, base + 2 * i + 1) for i in range(3)]
        self.coord_ports = [base + 10, base + 11]
        self.agent_ports = [base + 20 + i for i in range(args.agents)]
        self.generation = 0
        self.site_w = 250.0 * args.agents
        self.floor_w = None
        self.expiry_s = 6.0
        self.pki = os.path.join(self.root, "pki")
        self.password = "".join(random.choice("abcdef0123456789") for _ in range(24))
        self.root_password = "".join(random.choice("abcdef0123456789") for _ in range(24))
        self.etcd_refused = 0  # forged etcd puts refused / tried (counted as unauthenticated)
        self.etcd_tried = 0

    # ---- processes ----
    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.root, name + ".log"), "ab")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        self.procs[name] = p
        return p

    def kill(self, name, sig=signal.SIGKILL):
        p = self.procs.get(name)
        if p and p.poll() is None:
            os.kill(p.pid, sig)
            if sig == signal.SIGKILL:
                p.wait()

    def etcd_endpoints(self):
        return ",".join("https://127.0.0.1:%d" % c for c, _ in self.etcd_ports)

    def make_pki(self):
        os.makedirs(self.pki)
        with open(os.path.join(self.pki, "openssl.log"), "w") as log:
            subprocess.run(["bash", os.path.join(self.a.source, "scripts", "etcd_test_pki.sh"), self.pki],
                           stdout=log, stderr=subprocess.STDOUT, check=True, timeout=60)
        pw = os.path.join(self.root, "etcd.password")
        with open(pw, "w") as f:
            f.write(self.password + "\n")
        os.chmod(pw, 0o600)
        self.tls_ctx = ssl.create_default_context(cafile=os.path.join(self.pki, "ca.pem"))
        self.tls_ctx.load_cert_chain(os.path.join(self.pki, "client.pem"),
                                     os.path.join(self.pki, "client.key"))

    def pem(self, name):
        return os.path.join(self.pki, name)

    def setup_etcd_auth(self):
        """Users and roles (docs/fleet.md "Security", per-node roles), then auth on."""
        site = "/flexwatt/%s/" % SITE
        steps = [("role", "add", "root"), ("user", "add", "root:" + self.root_password),
                 ("user", "grant-role", "root", "root"), ("role", "add", "fw-coordinator"),
                 ("role", "grant-permission", "fw-coordinator", "--prefix", "read", site),
                 ("role", "grant-permission", "fw-coordinator", "--prefix", "readwrite", site + "assign/"),
                 ("role", "grant-permission", "fw-coordinator", "--prefix", "readwrite", site + "coordinator"),
                 ("role", "grant-permission", "fw-coordinator", "--prefix", "readwrite", site + "off/"),
                 ("role", "grant-permission", "fw-coordinator", "--prefix", "readwrite", site + "join/"),
                 ("role", "grant-permission", "fw-coordinator", "readwrite", site + "budget/grid"),
                 ("role", "grant-permission", "fw-coordinator", "--prefix", "readwrite", site + "plans/"),
                 ("user", "add", "fw-coordinator:" + self.password),
                 ("user", "grant-role", "fw-coordinator", "fw-coordinator")]
        for i in range(self.a.agents):
            r = "fw-node-n%d" % i
            steps += [("role", "add", r), ("role", "grant-permission", r, "--prefix", "read", site),
                      ("role", "grant-permission", r, "readwrite", site + "nodes/n%d" % i),
                      ("role", "grant-permission", r, "readwrite", site + "off/n%d" % i),
                      ("user", "add", "%s:%s" % (r, self.password)), ("user", "grant-role", r, r)]
        steps.append(("auth", "enable"))
        for st in steps:
            r = self.etcdctl(*st, user=None)
            if r.returncode != 0:
                print("fleet_faults: etcdctl %s: %s" % (" ".join(st[:3]), (r.stderr or r.stdout).strip()))
                return False
        return True

    def start_etcd(self, i):
        c, p = self.etcd_ports[i]
        initial = ",".join("m%d=http://127.0.0.1:%d" % (k, pp) for k, (_, pp) in enumerate(self.etcd_ports))
        self.spawn("etcd%d" % i, [
            self.a.etcd, "--name", "m%d" % i, "--data-dir", os.path.join(self.root, "m%d" % i),
            "--listen-client-urls", "https://127.0.0.1:%d" % c,
            "--advertise-client-urls", "https://127.0.0.1:%d" % c,
            "--cert-file", self.pem("server.pem"), "--key-file", self.pem("server.key"),
            "--client-cert-auth", "--trusted-ca-file", self.pem("ca.pem"),
            "--listen-peer-urls", "http://127.0.0.1:%d" % p,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % p,
            "--initial-cluster", initial, "--initial-cluster-state", "new",
            "--initial-cluster-token", "%s-%d" % (self.root, self.generation),
            "--log-level", "warn", "--logger", "zap", "--unsafe-no-fsync"])

    def etcd_healthy(self, i, timeout=1.0):
        try:
            with urllib.request.urlopen("https://127.0.0.1:%d/health" % self.etcd_ports[i][0],
                                        timeout=timeout, context=self.tls_ctx) as r:
                return b"true" in r.read()
        except Exception:
            return False

    def wait(self, what, pred, timeout):
        t0 = now()
        while now() - t0 < timeout:
            if pred():
                return now() - t0
            time.sleep(0.1)
        return None

    def etcdctl(self, *args, user="root", cert=True):
        """etcdctl over TLS; user: "root", None (no --user) or "name:password"."""
        argv = [self.a.etcdctl, "--endpoints", self.etcd_endpoints(), "--cacert", self.pem("ca.pem")]
        if cert:
            argv += ["--cert", self.pem("client.pem"), "--key", self.pem("client.key")]
        if user == "root":
            user = "root:" + self.root_password
        if user:
            argv += ["--user", user]
        return subprocess.run(argv + list(args), capture_output=True, text=True, timeout=10,
                              env=dict(os.environ, ETCDCTL_API="3"))

    def write_configs(self):
        tok = os.path.join(self.root, "coordinator.tokens")
        with open(tok, "w") as f:
            f.write("ops control %s\nviewer read %s\n" % (self.token, self.read_token))
        os.chmod(tok, 0o600)
        pw = os.path.join(self.root, "etcd.password")
        tls = "ca_file: %s, cert_file: %s, key_file: %s" % (self.pem("ca.pem"), self.pem("client.pem"),
                                                             self.pem("client.key"))
        for k, port in enumerate(self.coord_ports):
            with open(os.path.join(self.root, "coord%d.yaml" % k), "w") as f:
                f.write("site: %s\nid: coord-%d\netcd: [%s]\nbudget_w: %g\nlease_ttl_s: 3\n"
                        "expiry_s: %g\nrefresh_s: 2\nlisten: 127.0.0.1:%d\ntoken_file: %s\n"
                        "audit_log: %s\netcd_tls: {%s}\netcd_auth: {user: fw-coordinator, password_file: %s}\n"
                        % (SITE, k, self.etcd_endpoints(), self.site_w, self.expiry_s, port, tok,
                           os.path.join(self.root, "coord%d-audit.log" % k), tls, pw))
        scenario = os.path.join(self.a.source, "scenarios", "grpo-7b-a100.yaml")
        for i, port in enumerate(self.agent_ports):
            d = os.path.join(self.root, "agent%d" % i)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "agent.yaml"), "w") as f:
                f.write("backend: sim:%s\nseed: %d\nperiod_s: 0.25\njob_silent_after_s: 0\n"
                        "restore_file: %s/saved.json\nlock_file: %s/agent.lock\n"
                        "fleet:\n  etcd: [%s]\n  site: %s\n  node: n%d\n  safe_share_w: %g\n"
                        "  lease_ttl_s: 3\n  etcd_tls: {%s}\n"
                        "  etcd_auth: {user: fw-node-n%d, password_file: %s}\n"
                        "server:\n  unix_socket: %s/agent.sock\n  tcp_port: %d\n"
                        % (scenario, 100 + i, d, d, self.etcd_endpoints(), SITE, i,
                           self.site_w / self.a.agents, tls, i, pw, d, port))

    def start_coord(self, k):
        self.spawn("coord%d" % k, [self.a.flexwatt, "coordinator", "--config",
                                   os.path.join(self.root, "coord%d.yaml" % k)])

    def start_agent(self, i):
        d = os.path.join(self.root, "agent%d" % i)
        self.spawn("agent%d" % i, [self.a.flexwatt, "agent", "--config", os.path.join(d, "agent.yaml")])

    # ---- HTTP ----
    def http(self, method, url, body=None, token=None, timeout=1.0):
        req = urllib.request.Request(url, method=method,
                                     data=None if body is None else json.dumps(body).encode())
        if body is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"null")
            except Exception:
                return e.code, None
        except Exception:
            return -1, None

    def agent_status(self, i):
        s, j = self.http("GET", "http://127.0.0.1:%d/v1/status" % self.agent_ports[i], timeout=0.5)
        return j if s == 200 else None

    def grid_status(self):
        """(leader index, status) of the leading coordinator, else (None, None)."""
        for k, port in enumerate(self.coord_ports):
            s, j = self.http("GET", "http://127.0.0.1:%d/v1/grid/status" % port,
                             token=self.read_token, timeout=0.5)
            if s == 200 and j and j.get("leader"):
                return k, j
        return None, None

    def grid_put(self, body, token=None):
        k, _ = self.grid_status()
        port = self.coord_ports[k if k is not None else 0]
        return self.http("PUT", "http://127.0.0.1:%d/v1/grid/target" % port, body,
                         token=self.token if token is None else token)

    # ---- sampling ----
    def sampler(self):
        last_eff = self.site_w
        while not self.stop.is_set():
            t = now()
            site, sources, budgets = 0.0, [], []
            for i in range(self.a.agents):
                st = self.agent_status(i)
                if st is None:
                    sources.append("down")
                    budgets.append(None)
                    continue
                p = st.get("node_power_w")
                site += p if isinstance(p, (int, float)) else 0.0
                sources.append(st["budget"]["source"])
                budgets.append(st["budget"]["watts"])
                if self.floor_w is None and st.get("gpus"):
                    self.floor_w = sum(g["cap_min_w"] for g in st["gpus"])
            _, g = self.grid_status()
            if g is not None and g.get("effective_w", 0) > 0:
                last_eff = g["effective_w"]
            with self.lock:
                self.samples.append((t, site, last_eff, sources, budgets))
            time.sleep(max(0.0, 0.5 - (now() - t)))

    def latest(self):
        with self.lock:
            return self.samples[-1] if self.samples else None

    def all_on_coordinator(self):
        s = self.latest()
        return s is not None and all(x == "coordinator" for x in s[3])

    def wait_all_coordinator(self, timeout):
        t0 = now()
        mark = len(self.samples)
        while now() - t0 < timeout:
            with self.lock:
                fresh = self.samples[mark:]
            if fresh and all(x == "coordinator" for x in fresh[-1][3]):
                return now() - t0
            time.sleep(0.1)
        return None

    def recovery(self, t_fault, timeout, hold_s=None):
        """Seconds from t_fault until every agent is on "coordinator" for good: waits at least
        hold_s (the assignment lifetime + 2 s, so an assignment from before the fault has
        expired) and until all agents stayed on coordinator for 2 s; the answer is the time of
        the first sample after the last one that had an agent elsewhere (0: none had)."""
        hold_s = self.expiry_s + 2 if hold_s is None else hold_s
        deadline = t_fault + timeout
        while now() < deadline:
            with self.lock:
                win = [x for x in self.samples if x[0] >= t_fault]
            if now() >= t_fault + hold_s and win:
                bad = [x[0] for x in win if any(src != "coordinator" for src in x[3])]
                last_bad = bad[-1] if bad else None
                if all(src == "coordinator" for src in win[-1][3]) and \
                        (last_bad is None or win[-1][0] - last_bad >= 2):
                    if last_bad is None:
                        return 0.0
                    after = [x[0] for x in win if x[0] > last_bad]
                    return after[0] - t_fault
            time.sleep(0.1)
        return None

    def record(self, name, recover_s, ok=None, **extra):
        ok = recover_s is not None if ok is None else ok
        # recover_s: from the fault's end (or, for faults an assignment outlives, its start)
        # to every agent back on "coordinator" for good; 0 = no sample (every 0.5 s) had one
        # elsewhere.
        r = {"experiment": name, "ok": bool(ok),
             "recover_s": None if recover_s is None else round(recover_s, 2)}
        r.update(extra)
        self.results.append(r)
        print("  %-22s %s  recover %s s %s" % (name, "ok  " if ok else "FAIL",
                                                 r["recover_s"], json.dumps(extra) if extra else ""),
              flush=True)

    # ---- experiments ----
    def leader_index(self, timeout=10):
        t0 = now()
        while now() - t0 < timeout:
            k, _ = self.grid_status()
            if k is not None:
                return k
            time.sleep(0.1)
        return None

    def exp_leader_kill(self):
        k = self.leader_index()
        t0 = now()
        self.kill("coord%d" % k)
        led = self.wait("other leads", lambda: self.grid_status()[0] == 1 - k, 15)
        back = self.recovery(t0, 30)
        self.record("leader_kill", back, ok=led is not None and back is not None,
                    takeover_s=None if led is None else round(led, 2))
        self.start_coord(k)

    def etcd_leader(self):
        r = self.etcdctl("endpoint", "status", "-w", "json")
        try:
            for e in json.loads(r.stdout):
                h = e["Status"]["header"]
                if e["Status"]["leader"] == h["member_id"]:
                    port = int(e["Endpoint"].rsplit(":", 1)[1])
                    return [c for c, _ in self.etcd_ports].index(port)
        except Exception:
            return None
        return None

    def exp_etcd_leader_kill(self):
        m = self.etcd_leader()
        if m is None:
            self.record("etcd_leader_kill", None, error="no etcd leader found")
            return
        t0 = now()
        self.kill("etcd%d" % m)
        back = self.recovery(t0, 30)
        self.record("etcd_leader_kill", back, member=m)
        self.start_etcd(m)
        self.wait("member back", lambda: self.etcd_healthy(m), 20)

    def exp_etcd_down(self):
        for i in range(3):
            self.kill("etcd%d" % i, signal.SIGSTOP)
        time.sleep(20)
        s = self.latest()
        on_safe = sum(1 for x in s[3] if x == "coordinator_safe_share")
        for i in range(3):
            self.kill("etcd%d" % i, signal.SIGCONT)
        t0 = now()
        back = self.recovery(t0, 40, hold_s=2)
        self.record("etcd_down_20s", back, agents_on_safe_share_during=on_safe)

    def exp_leader_sigstop(self):
        k = self.leader_index()
        t0 = now()
        self.kill("coord%d" % k, signal.SIGSTOP)
        led = self.wait("other leads", lambda: self.grid_status()[0] == 1 - k, 15)
        time.sleep(max(0.0, t0 + 15 - now()))
        self.kill("coord%d" % k, signal.SIGCONT)
        back = self.recovery(t0, 40)
        time.sleep(1)
        leaders = sum(1 for port in self.coord_ports
                      if (self.http("GET", "http://127.0.0.1:%d/v1/grid/status" % port,
                                    token=self.read_token)[1] or {}).get("leader"))
        self.record("leader_sigstop_15s", back, ok=back is not None and leaders == 1,
                    takeover_s=None if led is None else round(led, 2), leaders_after=leaders)

    def exp_agents_restarted(self):
        n = max(1, self.a.agents // 2)
        for i in range(n):
            self.kill("agent%d" % i)
        time.sleep(2)
        t0 = now()
        for i in range(n):
            self.start_agent(i)
        back = self.recovery(t0, 30, hold_s=2)
        self.record("agents_restarted", back, agents=n)

    def exp_etcd_rebuilt(self):
        t0 = now()
        for i in range(3):
            self.kill("etcd%d" % i)
            shutil.rmtree(os.path.join(self.root, "m%d" % i), ignore_errors=True)
        self.generation += 1
        for i in range(3):
            self.start_etcd(i)
        for i in range(3):
            self.wait("etcd up", lambda i=i: self.etcd_healthy(i), 20)
        auth = self.setup_etcd_auth()
        auth_s = now() - t0
        back = self.recovery(t0, 60)
        self.record("etcd_rebuilt_empty", back, ok=auth and back is not None,
                    auth_set_up_again_s=round(auth_s, 2))

    def forged_etcd_puts(self, key, body):
        """Puts of `body` at `key` without credentials (a client certificate, no user), without
        a certificate, and with another node's user: etcd must refuse each (counted with the
        unauthenticated writes). Returns {what: refused}."""
        refused = {}
        tries = [("no_user", dict(user=None)), ("no_client_cert", dict(user=None, cert=False)),
                 ("node_n1_user", dict(user="fw-node-n%d:%s" % (min(1, self.a.agents - 1), self.password)))]
        for what, kw in tries:
            refused[what] = self.etcdctl("put", key, body, **kw).returncode != 0
        self.etcd_tried += len(tries)
        self.etcd_refused += sum(refused.values())
        return refused

    def exp_forged(self):
        forged = 123.0
        body = json.dumps({"watts": forged, "revision": 9000000000000000000,
                           "expires_unix_s": 9999999999})
        key = "/flexwatt/%s/assign/n0" % SITE
        refused = self.forged_etcd_puts(key, body)
        # With root's credentials etcd accepts it: the agents' fencing must refuse it.
        r = self.etcdctl("put", key, body)
        pinned = False
        t0 = now()
        while now() - t0 < 8:
            st = self.agent_status(0)
            if st and abs(st["budget"]["watts"] - forged) < 1e-6:
                pinned = True
            time.sleep(0.2)
        ok = (r.returncode == 0 and not pinned and self.all_on_coordinator()
              and self.etcd_refused == self.etcd_tried)
        self.record("forged_assignment", 0.0 if ok else None, ok=ok, forged_applied=pinned,
                    etcd_refused=refused, root_put_accepted=r.returncode == 0)

    def exp_zero_w(self):
        t = now()
        s, j = self.grid_put({"value": 0, "correlation_id": "zero", "start_time": t,
                              "end_time": t + 10})
        at_floor = self.wait("floor", lambda: self.latest() and all(
            b is not None and self.floor_w is not None and abs(b - self.floor_w) < 1e-6
            for b in self.latest()[4]), 8)
        time.sleep(max(0.0, t + 10 - now()))
        with self.lock:
            last = [x[1] for x in self.samples if t + 7 <= x[0] <= t + 10]
        power = sum(last) / len(last) if last else float("nan")
        back = self.wait("raised", lambda: all(b is not None and b > (self.floor_w or 0) + 1
                                               for b in self.latest()[4]), 20)
        self.record("zero_w_target", back, ok=s == 200 and at_floor is not None and back is not None,
                    status=s, floor_reached_s=None if at_floor is None else round(at_floor, 2),
                    site_w_last_3s=round(power, 1), floor_w_per_node=self.floor_w)

    def exp_future_during_active(self):
        t = now()
        active = 0.6 * self.site_w
        s1, _ = self.grid_put({"value": active, "correlation_id": "active", "start_time": t,
                               "end_time": t + 12})
        time.sleep(2)
        s2, _ = self.grid_put({"value": 0.8 * self.site_w, "correlation_id": "future",
                               "start_time": t + 120, "end_time": t + 150})
        s3, _ = self.grid_put({"value": 1, "correlation_id": "past", "start_time": t - 100,
                               "end_time": t - 50})
        time.sleep(4)
        _, g = self.grid_status()
        eff = g["effective_w"] if g else None
        self.grid_put({"value": None, "correlation_id": "future"})
        time.sleep(max(0.0, t + 12 - now()))
        back = self.wait("after", lambda: (self.grid_status()[1] or {}).get("effective_w") == self.site_w, 10)
        ok = s1 == 200 and s2 == 200 and s3 in (409, 422) and eff is not None and abs(eff - active) < 1e-6
        self.record("future_during_active", back, ok=ok and back is not None,
                    effective_w_during=eff, past_status=s3)

    def exp_openadr(self):
        k, _ = self.grid_status()
        port = self.coord_ports[k if k is not None else 0]
        t = int(now()) + 2
        ev = {"id": "adr-1", "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "W"}],
              "intervals": [
                  {"id": 0, "intervalPeriod": {"start": t, "duration": "PT5S"},
                   "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [0.7 * self.site_w]}]},
                  {"id": 1, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [0.5 * self.site_w]}]}]}
        s, _ = self.http("POST", "http://127.0.0.1:%d/v1/grid/openadr/event" % port, ev, token=self.token)
        seen = set()
        t0 = now()
        while now() - t0 < 14:
            _, g = self.grid_status()
            if g:
                seen.add(round(g["effective_w"], 3))
            time.sleep(0.2)
        ok = s == 200 and round(0.7 * self.site_w, 3) in seen and round(0.5 * self.site_w, 3) in seen
        back = self.wait_all_coordinator(10)
        self.record("openadr_multi", back, ok=ok and back is not None, status=s,
                    effective_seen=sorted(seen))

    def exp_unauthenticated(self):
        tries = []
        for port in self.coord_ports:
            u = "http://127.0.0.1:%d" % port
            body = {"value": 1, "correlation_id": "evil"}
            tries.append(self.http("PUT", u + "/v1/grid/target", body, token="")[0])
            tries.append(self.http("PUT", u + "/v1/grid/target", body, token="wrong-token-xxxxxxxx")[0])
            tries.append(self.http("PUT", u + "/v1/grid/target", body, token=self.read_token)[0])
            tries.append(self.http("PUT", u + "/v1/grid/target", {"value": None, "correlation_id": "x"},
                                   token="")[0])
            tries.append(self.http("POST", u + "/v1/grid/openadr/event", {"intervals": []}, token="")[0])
        for port in self.agent_ports:
            u = "http://127.0.0.1:%d" % port
            tries.append(self.http("PUT", u + "/v1/budget", {"watts": 400})[0])
            tries.append(self.http("PUT", u + "/v1/controller", {"controller": "uncontrolled"})[0])
        if self.etcd_tried == 0:  # forged_assignment did not run
            self.forged_etcd_puts("/flexwatt/%s/budget" % SITE, json.dumps({"watts": 1e6}))
        http_accepted = sum(1 for s in tries if 200 <= s < 300)
        # The forged etcd puts (forged_assignment) count too: without credentials, without a
        # client certificate, with another node's.
        self.unauth_tried = len(tries) + self.etcd_tried
        self.unauth_accepted = http_accepted + (self.etcd_tried - self.etcd_refused)
        self.record("unauthenticated", 0.0,
                    ok=self.unauth_accepted == 0 and -1 not in tries and self.etcd_tried > 0,
                    tried=self.unauth_tried, accepted=self.unauth_accepted,
                    statuses=sorted(set(tries)), etcd_tried=self.etcd_tried,
                    etcd_refused=self.etcd_refused)

    # ---- report ----
    def windows(self):
        with self.lock:
            s = list(self.samples)
        worst, over, n = 0.0, 0, 0
        j = 0
        for i in range(len(s)):
            while s[i][0] - s[j][0] > 30:
                j += 1
            if s[i][0] - s[0][0] < 30:
                continue
            win = s[j:i + 1]
            p = sum(x[1] for x in win) / len(win)
            b = sum(x[2] for x in win) / len(win)
            n += 1
            worst = max(worst, p / b - 1)
            over += p > b * (1 + 1e-6)
        inst = max((x[1] / x[2] - 1 for x in s if x[2] > 0), default=0.0)
        return n, over, worst, inst

    def run(self):
        self.t_start = now()
        deadline = threading.Timer(self.a.max_s, self.abort)
        deadline.daemon = True
        deadline.start()
        try:
            self.make_pki()
            self.write_configs()
            for i in range(3):
                self.start_etcd(i)
            for i in range(3):
                if self.wait("etcd", lambda i=i: self.etcd_healthy(i), 20) is None:
                    print("fleet_faults: etcd member %d did not come up (ports taken?)" % i)
                    return 1
            if not self.setup_etcd_auth():
                return 1
            for k in range(2):
                self.start_coord(k)
            for i in range(self.a.agents):
                self.start_agent(i)
            threading.Thread(target=self.sampler, daemon=True).start()
            if self.wait_all_coordinator(30) is None:
                print("fleet_faults: agents never all on coordinator; logs in", self.root)
                self.a.keep = True
                return 1
            time.sleep(5)
            print("fleet_faults: %d agents, site budget %g W, etcd x3 (TLS, auth, per-node roles), "
                  "2 coordinators" %
                  (self.a.agents, self.site_w), flush=True)
            for e in self.a.only or EXPERIMENTS:
                getattr(self, "exp_" + e)()
                self.wait_all_coordinator(20)
                time.sleep(2)
            time.sleep(3)
            return self.report()
        finally:
            deadline.cancel()
            self.cleanup()

    def report(self):
        n, over, worst, inst = self.windows()
        end = self.latest()
        stuck = [i for i, x in enumerate(end[3]) if x != "coordinator"]
        rep = {"agents": self.a.agents, "site_w": self.site_w, "floor_w_per_node": self.floor_w,
               "samples": len(self.samples), "windows_30s": n, "windows_30s_over": over,
               "worst_30s_excess": round(worst, 5), "worst_instant_excess": round(inst, 4),
               "agents_not_on_coordinator_at_end": stuck,
               "unauthenticated_writes_tried": self.unauth_tried,
               "unauthenticated_writes_accepted": self.unauth_accepted,
               "experiments": self.results, "simulated": True,
               "duration_s": round(now() - self.t_start, 1), "sample_period_s": 0.5}
        ok = over == 0 and not stuck and self.unauth_accepted == 0 and all(r["ok"] for r in self.results)
        rep["ok"] = ok
        os.makedirs(self.a.out, exist_ok=True)
        with open(os.path.join(self.a.out, "report.json"), "w") as f:
            json.dump(rep, f, indent=2)
        with open(os.path.join(self.a.out, "samples.csv"), "w") as f:
            f.write("t_s,site_w,effective_w,sources\n")
            t0 = self.samples[0][0]
            for t, p, b, src, _ in self.samples:
                f.write("%.2f,%.1f,%.1f,%s\n" % (t - t0, p, b, "|".join(src)))
        print("site 30 s means: %d windows, %d over budget, worst %+.3f %%; worst 0.5 s sample %+.1f %%"
              % (n, over, 100 * worst, 100 * inst))
        print("agents not on coordinator at the end: %s" % (stuck or "none"))
        print("unauthenticated writes accepted: %d of %d" % (self.unauth_accepted, self.unauth_tried))
        print("report: %s/report.json -> %s" % (self.a.out, "ok" if ok else "FAILED"))
        return 0 if ok else 1

    def abort(self):
        print("fleet_faults: --max-s %g reached; stopping" % self.a.max_s, flush=True)
        self.cleanup()
        os._exit(1)

    def cleanup(self):
        self.stop.set()
        for name, p in list(self.procs.items()):
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait(timeout=5)
                except Exception:
                    pass
        if self.a.keep:
            print("fleet_faults: logs kept in", self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


EXPERIMENTS = ["leader_kill", "etcd_leader_kill", "etcd_down", "leader_sigstop", "agents_restarted",
               "etcd_rebuilt", "forged", "zero_w", "future_during_active", "openadr",
               "unauthenticated"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--out", default="/tmp/flexwatt-faults")
    ap.add_argument("--flexwatt", default=os.environ.get("FLEXWATT", os.path.join(src, "build", "flexwatt")))
    ap.add_argument("--etcd", default=os.environ.get("FLEXWATT_ETCD", "/usr/bin/etcd"))
    ap.add_argument("--etcdctl", default="/usr/bin/etcdctl")
    ap.add_argument("--max-s", type=float, default=600, help="stop everything after this long")
    ap.add_argument("--only", nargs="*", choices=EXPERIMENTS, help="run only these experiments")
    ap.add_argument("--keep", action="store_true", help="keep the logs and data dirs")
    ap.add_argument("--source", default=src)
    a = ap.parse_args()
    for exe in (a.flexwatt, a.etcd, a.etcdctl):
        if not os.access(exe, os.X_OK):
            print("fleet_faults: %s not found (make build; apt-get install etcd-server etcd-client)" % exe,
                  file=sys.stderr)
            return 2
    if not shutil.which("openssl"):
        print("fleet_faults: openssl not found (apt-get install openssl)", file=sys.stderr)
        return 2
    if not 1 <= a.agents <= 16:
        print("fleet_faults: --agents: 1..16", file=sys.stderr)
        return 2
    return Campaign(a).run()


if __name__ == "__main__":
    sys.exit(main())
