#!/usr/bin/env python3
"""Kubernetes node <-> flexwatt agent: the node's budget from its annotations or labels, the
agent's GPU cap range published back as node labels. Runs as a sidecar of the agent's
DaemonSet (deploy/kubernetes/flexwatt-agent.yaml); Python standard library only.

Every --interval-s (and once with --once):
  1. GET the Node object from the Kubernetes API. The budget is the annotation
     flexwatt.io/budget-watts (else the label of that name), with flexwatt.io/budget-window-s
     (optional, the agent's default 30 s otherwise). When it is not the agent's budget in force
     (a restarted agent, an API write since), PUT /v1/budget {"watts", "window_s"?} to the agent.
     A value that is not a number in [1, 1e7] W (window (0.1, 86400] s) is refused here and
     logged; nothing is sent. No annotation or label: the agent keeps its own budget.
  2. GET /v1/status from the agent and publish the GPUs' settable cap range as labels, when
     they differ from the node's:
       flexwatt.io/gpu-cap-min-watts      lowest cap_min_w over the node's GPUs
       flexwatt.io/gpu-cap-max-watts      highest cap_max_w
       flexwatt.io/gpu-cap-default-watts  highest cap_default_w
       flexwatt.io/gpu-count              GPUs the agent manages
     (integers, W; PATCH /api/v1/nodes/NAME, application/merge-patch+json). A scheduler or an
     operator selects nodes on them (`kubectl get nodes -L flexwatt.io/gpu-cap-max-watts`).
One JSON line per action on stdout: {"event": "budget"|"labels"|"error", ...}.

In the cluster the API is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the
pod's service-account token and CA; the service account needs `get` and `patch` on nodes
(the ClusterRole in flexwatt-agent.yaml). --api, --token-file and --ca-file override them
(a test runs it against a fake API server over plain http).

    node_budget.py --node "$NODE_NAME" --socket /run/flexwatt/agent.sock --interval-s 30
"""

import argparse
import http.client
import json
import math
import os
import socket
import ssl
import sys
import time
import urllib.parse

PREFIX = "flexwatt.io/"
BUDGET_KEY = PREFIX + "budget-watts"
WINDOW_KEY = PREFIX + "budget-window-s"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def log(event, **fields):
    print(json.dumps({"event": event, **fields}, sort_keys=True), flush=True)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class HttpError(Exception):
    def __init__(self, where, status, body):
        super().__init__(f"{where}: HTTP {status}: {body[:300]}")
        self.status = status


def request(conn, method, path, body=None, headers=None, where=""):
    """One request on a fresh connection; the decoded JSON answer. HttpError on >= 400."""
    h = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        raw = resp.read().decode()
    finally:
        conn.close()
    if resp.status >= 400:
        raise HttpError(where or f"{method} {path}", resp.status, raw)
    return json.loads(raw) if raw else {}


class Agent:
    def __init__(self, socket_path, url, token):
        self._socket = socket_path
        self._url = urllib.parse.urlsplit(url) if url else None
        self._token = token

    def _conn(self):
        if self._url:
            return http.client.HTTPConnection(self._url.hostname, self._url.port or 80, timeout=10)
        return _UnixConnection(self._socket, 10)

    def call(self, method, path, body=None):
        h = {"Accept": "application/json"}
        if self._token:
            h["Authorization"] = "Bearer " + self._token
        return request(self._conn(), method, path, body, h, where="agent " + method + " " + path)


class KubeApi:
    def __init__(self, base, token, ca_file):
        self._u = urllib.parse.urlsplit(base)
        self._token = token
        self._ctx = None
        if self._u.scheme == "https":
            self._ctx = ssl.create_default_context(cafile=ca_file if ca_file else None)

    def _conn(self):
        if self._u.scheme == "https":
            return http.client.HTTPSConnection(self._u.hostname, self._u.port or 443, timeout=10,
                                               context=self._ctx)
        return http.client.HTTPConnection(self._u.hostname, self._u.port or 80, timeout=10)

    def call(self, method, path, body=None, content_type=None):
        h = {"Accept": "application/json"}
        if self._token:
            h["Authorization"] = "Bearer " + self._token
        if content_type:
            h["Content-Type"] = content_type
        return request(self._conn(), method, path, body, h, where="kubernetes " + method + " " + path)


def parse_number(text, lo, hi, lo_open=False):
    """The number in `text` when it is finite and in [lo, hi] ((lo, hi] with lo_open); else None."""
    try:
        v = float(str(text).strip())
    except ValueError:
        return None
    if not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
        return None
    return v


def wanted_budget(node):
    """(watts, window_s or None, where) from the node's annotations, else labels; None when the
    node names no budget. Raises ValueError naming the key for a bad value."""
    meta = node.get("metadata", {})
    for where in ("annotations", "labels"):
        kv = meta.get(where) or {}
        if BUDGET_KEY not in kv:
            continue
        watts = parse_number(kv[BUDGET_KEY], 1, 1e7)
        if watts is None:
            raise ValueError(f"{where} {BUDGET_KEY}={kv[BUDGET_KEY]!r}: not a number of watts in [1, 1e7]")
        window = None
        if WINDOW_KEY in kv:
            window = parse_number(kv[WINDOW_KEY], 0.1, 86400)
            if window is None:
                raise ValueError(f"{where} {WINDOW_KEY}={kv[WINDOW_KEY]!r}: not a number of seconds in [0.1, 86400]")
        return watts, window, where
    return None


def cap_labels(status):
    """The labels publishing the GPUs' cap range (integer W); {} without GPUs that report one."""
    gpus = status.get("gpus") or []

    def pick(key, fn):
        vals = [g[key] for g in gpus if isinstance(g.get(key), (int, float))]
        return str(int(round(fn(vals)))) if vals else None

    out = {PREFIX + "gpu-count": str(len(gpus))} if gpus else {}
    for label, key, fn in (("gpu-cap-min-watts", "cap_min_w", min),
                           ("gpu-cap-max-watts", "cap_max_w", max),
                           ("gpu-cap-default-watts", "cap_default_w", max)):
        v = pick(key, fn)
        if v is not None:
            out[PREFIX + label] = v
    return out


def sync_once(kube, agent, node_name):
    """One pass. Returns 0, or 1 on an error."""
    rc = 0
    path = "/api/v1/nodes/" + urllib.parse.quote(node_name, safe="")
    try:
        node = kube.call("GET", path)
    except (HttpError, OSError, ValueError) as e:
        log("error", what="get node", message=str(e))
        return 1
    try:
        want = wanted_budget(node)
    except ValueError as e:
        log("error", what="budget", message=str(e))
        want, rc = None, 1
    status = None
    try:
        status = agent.call("GET", "/v1/status")
    except (HttpError, OSError, ValueError) as e:
        log("error", what="agent status", message=str(e))
        return 1
    if want is not None:
        watts, window, where = want
        budget = status.get("budget") or {}
        in_force = budget.get("watts") == watts and (window is None or budget.get("window_s") == window)
        if not in_force:
            body = {"watts": watts}
            if window is not None:
                body["window_s"] = window
            try:
                answer = agent.call("PUT", "/v1/budget", body)
                log("budget", node=node_name, source=where, watts=watts, window_s=window,
                    config_version=answer.get("config_version"))
            except (HttpError, OSError, ValueError) as e:
                log("error", what="put budget", message=str(e))
                rc = 1
    labels = cap_labels(status)
    have = node.get("metadata", {}).get("labels") or {}
    changed = {k: v for k, v in labels.items() if have.get(k) != v}
    if changed:
        try:
            kube.call("PATCH", path, {"metadata": {"labels": changed}},
                      content_type="application/merge-patch+json")
            log("labels", node=node_name, labels=changed)
        except (HttpError, OSError, ValueError) as e:
            log("error", what="patch labels", message=str(e))
            rc = 1
    return rc


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--node", default=os.environ.get("NODE_NAME"),
                   help="this node's name (default $NODE_NAME, from the downward API)")
    p.add_argument("--socket", default=os.environ.get("FLEXWATT_SOCK", "/run/flexwatt/agent.sock"),
                   help="the agent's Unix socket")
    p.add_argument("--agent-url", help="the agent over TCP instead, e.g. http://127.0.0.1:9471")
    p.add_argument("--agent-token-file", help="a file holding a control-scope token for the agent")
    p.add_argument("--api", help="Kubernetes API base URL (default: in-cluster)")
    p.add_argument("--token-file", help="Kubernetes bearer token file (default: the service account's)")
    p.add_argument("--ca-file", help="CA bundle for the API (default: the service account's)")
    p.add_argument("--interval-s", type=float, default=30.0, help="seconds between passes")
    p.add_argument("--once", action="store_true", help="one pass, exit 0 or 1")
    a = p.parse_args()
    if not a.node:
        p.error("--node (or $NODE_NAME) is required")
    if a.interval_s < 1:
        p.error("--interval-s must be at least 1")
    return a


def read_file(path):
    with open(path) as f:
        return f.read().strip()


def main():
    a = parse_args()
    api = a.api
    token_file, ca_file = a.token_file, a.ca_file
    if api is None:
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            print("node_budget: not in a cluster ($KUBERNETES_SERVICE_HOST unset); give --api", file=sys.stderr)
            return 2
        api = f"https://{host}:{port}"
        token_file = token_file or SA_DIR + "/token"
        ca_file = ca_file or SA_DIR + "/ca.crt"
    try:
        token = read_file(token_file) if token_file else None
        agent_token = read_file(a.agent_token_file) if a.agent_token_file else None
    except OSError as e:
        print(f"node_budget: {e}", file=sys.stderr)
        return 2
    kube = KubeApi(api, token, ca_file)
    agent = Agent(a.socket, a.agent_url, agent_token)
    while True:
        rc = sync_once(kube, agent, a.node)
        if a.once:
            return rc
        time.sleep(a.interval_s)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
