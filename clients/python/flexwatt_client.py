"""Client for the flexwatt node agent's HTTP API (docs/agent-api.md). Standard library only.

Connects over the agent's Unix socket (default) or TCP:

    from flexwatt_client import FlexwattClient
    fw = FlexwattClient()                                   # $FLEXWATT_SOCK or /run/flexwatt/agent.sock
    fw = FlexwattClient(url="http://127.0.0.1:9471", token="...")
    print(fw.status()["node_power_w"])
    job = fw.register_job(kind="grpo", knobs={"gen_concurrency": {"min": 8, "max": 64}})
    knobs = job.progress(tokens_total=1000, steps_total=1, phase="generate")

The token comes from the `token` argument, else $FLEXWATT_TOKEN, else none.
Every call raises FlexwattError (with .status and .message) on an HTTP error.
"""

import http.client
import json
import os
import socket
import urllib.parse

DEFAULT_SOCKET = "/run/flexwatt/agent.sock"


def visible_gpu_uuids(env=None):
    """The GPUs this process sees, by UUID: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES
    (what the NVIDIA device plugin sets in a pod), when every entry is a UUID ("GPU-..." or
    "MIG-..."); None otherwise. Indices there are not the host's NVML indices (a pod given host
    GPUs 4-7 sees them as 0-3), so they are never guessed from."""
    env = os.environ if env is None else env
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        entries = [e.strip() for e in env.get(var, "").split(",") if e.strip()]
        if entries and all(e.startswith(("GPU-", "MIG-")) for e in entries):
            return entries
        if entries:
            return None
    return None


class FlexwattError(Exception):
    """An error answer from the agent: HTTP status and the agent's message."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class FlexwattClient:
    def __init__(self, socket_path=None, url=None, token=None, timeout_s=10.0):
        url = url or os.environ.get("FLEXWATT_URL")
        if url:
            u = urllib.parse.urlsplit(url)
            if u.scheme != "http":
                raise ValueError("only http:// URLs are supported (use the Unix socket otherwise)")
            self._tcp = (u.hostname, u.port or 80)
            self._socket = None
        else:
            self._tcp = None
            self._socket = socket_path or os.environ.get("FLEXWATT_SOCK", DEFAULT_SOCKET)
        self._token = token if token is not None else os.environ.get("FLEXWATT_TOKEN")
        self._timeout_s = timeout_s

    def _connection(self, timeout_s):
        if self._socket:
            return _UnixConnection(self._socket, timeout_s)
        return http.client.HTTPConnection(self._tcp[0], self._tcp[1], timeout=timeout_s)

    def _headers(self, body):
        h = {"Accept": "application/json"}
        if self._token:
            h["Authorization"] = "Bearer " + self._token
        if body is not None:
            h["Content-Type"] = "application/json"
        return h

    def request(self, method, path, body=None, timeout_s=None):
        """One request; returns the decoded JSON answer (or text for non-JSON answers)."""
        conn = self._connection(timeout_s or self._timeout_s)
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers=self._headers(body))
            resp = conn.getresponse()
            raw = resp.read().decode()
            ctype = resp.getheader("Content-Type", "")
            payload = json.loads(raw) if ctype.startswith("application/json") and raw else raw
            if resp.status >= 400:
                msg = payload.get("error", raw) if isinstance(payload, dict) else raw
                raise FlexwattError(resp.status, msg)
            return payload
        finally:
            conn.close()

    # Read endpoints.
    def discover(self):
        return self.request("GET", "/v1/discover")

    def status(self):
        return self.request("GET", "/v1/status")

    def metrics(self):
        return self.request("GET", "/metrics")

    def jobs(self):
        return self.request("GET", "/v1/jobs")["jobs"]

    def stream(self, max_events=None):
        """Yields one state dict per tick from GET /v1/stream (server-sent events)."""
        path = "/v1/stream" + (f"?max_events={int(max_events)}" if max_events else "")
        conn = self._connection(None)  # no read timeout: the agent sends keep-alives
        try:
            conn.request("GET", path, headers=self._headers(None))
            resp = conn.getresponse()
            if resp.status >= 400:
                raise FlexwattError(resp.status, resp.read().decode())
            data = []
            for line in resp:
                line = line.decode().rstrip("\n")
                if line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    yield json.loads("\n".join(data))
                    data = []
        finally:
            conn.close()

    # Write endpoints.
    def set_budget(self, watts, window_s=None, scope=None, schedule=None, expected_version=None):
        body = {"watts": watts}
        if window_s is not None:
            body["window_s"] = window_s
        if scope is not None:
            body["scope"] = scope
        if schedule is not None:
            body["schedule"] = schedule
        if expected_version is not None:
            body["expected_version"] = expected_version
        return self.request("PUT", "/v1/budget", body)

    def set_controller(self, spec, expected_version=None):
        body = {"controller": spec}
        if expected_version is not None:
            body["expected_version"] = expected_version
        return self.request("PUT", "/v1/controller", body)

    def register_job(self, id=None, name=None, kind=None, gpus=None, knobs=None, pfi=None):
        """Registers a training job; returns a Job. knobs: {name: {min, max, step?, default?}}.
        pfi: the job's Power Flexibility Index when known (reported in the agent's status).
        gpus: NVML indices as the agent's status lists them, GPU UUIDs ("GPU-..."), or
        "visible": the UUIDs of visible_gpu_uuids() (ValueError when there are none)."""
        if gpus == "visible":
            gpus = visible_gpu_uuids()
            if not gpus:
                raise ValueError("gpus='visible': neither CUDA_VISIBLE_DEVICES nor "
                                 "NVIDIA_VISIBLE_DEVICES lists GPU UUIDs; pass the UUIDs "
                                 "(nvidia-smi -L) or the host's NVML indices")
        body = {}
        for k, v in (("id", id), ("name", name), ("kind", kind), ("gpus", gpus), ("knobs", knobs),
                     ("pfi", pfi)):
            if v is not None:
                body[k] = v
        answer = self.request("POST", "/v1/jobs", body)
        return Job(self, answer)


class Job:
    """A registered job: report progress, read the knobs the agent chose."""

    def __init__(self, client, answer):
        self._client = client
        self.id = answer["id"]
        self.knobs = answer.get("knobs", {})
        self.knob_version = answer.get("knob_version", 0)

    def _take(self, answer):
        self.knobs = answer["knobs"]
        self.knob_version = answer["knob_version"]
        return self.knobs

    def progress(self, tokens_total, steps_total, phase=None):
        """Reports cumulative progress; returns the knobs in force."""
        body = {"tokens_total": tokens_total, "steps_total": steps_total}
        if phase is not None:
            body["phase"] = phase
        return self._take(self._client.request("POST", f"/v1/jobs/{self.id}/progress", body))

    def wait_knobs(self, wait_s):
        """Long-polls until the knobs change from the ones last seen, or wait_s passes.
        Returns (knobs, changed)."""
        path = f"/v1/jobs/{self.id}/knobs?since={self.knob_version}&wait_s={wait_s:g}"
        answer = self._client.request("GET", path, timeout_s=wait_s + 10)
        self._take(answer)
        return self.knobs, answer["changed"]

    def set_pfi(self, pfi, source="operator"):
        """Records the job's Power Flexibility Index on the agent (source: sweep, registration,
        operator)."""
        return self._client.request("PUT", f"/v1/jobs/{self.id}/pfi", {"pfi": pfi, "source": source})

    def close(self):
        self._client.request("DELETE", f"/v1/jobs/{self.id}")
