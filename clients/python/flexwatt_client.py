"""Client for the flexwatt node agent's HTTP API (docs/agent-api.md). Standard library only.

Connects over the agent's Unix socket (default) or TCP:

    from flexwatt_client import FlexwattClient
    fw = FlexwattClient()                                   # $FLEXWATT_SOCK or /run/flexwatt/agent.sock
    fw = FlexwattClient(url="http://127.0.0.1:9471", token="...")
    print(fw.status()["node_power_w"])
    job = fw.register_job(kind="grpo", knobs={"gen_concurrency": {"min": 8, "max": 64}})
    knobs = job.progress(tokens_total=1000, steps_total=1, phase="generate")
    # what is coming, ahead of the power meter (Job.progress's docstring):
    knobs = job.progress(4096, 2, phase="forward", checkpoint_in_iters=1, checkpoint_s=30)

The token comes from the `token` argument, else $FLEXWATT_TOKEN, else none.
The operator calls (status, set_budget, ...) raise FlexwattError (with .status and .message)
on an HTTP error and OSError when the agent cannot be reached.

A training job survives the agent going away (a restart, an upgrade, a crash). The calls a
training loop makes each step, Job.progress() and Job.wait_knobs(), never raise for a
connection error, a timeout or a 5xx answer: they return the knobs last in force at once
(wait_knobs: after at most its wait_s), and try the agent again at the next call once a
back-off has passed (retry_min_s, doubling up to retry_max_s). Each try waits at most
step_timeout_s for an answer. When the agent answers again but no longer knows the job (404:
it restarted), the job registers again with the same id, GPUs and knob ladder, each knob's
default being the value in force, and carries on. One log line (logger "flexwatt_client",
WARNING) says the agent went away, one that it is back. register_job() likewise returns a
job that registers once the agent answers when the agent cannot be reached at start. Only a
request the agent finds wrong raises: 400/422 (a bad registration or progress going
backwards) and any 4xx refusal of register_job() (401/403: a token problem).
FlexwattClient(resilient=False) keeps the old behaviour: every error raises.

PipelineTimings is the pipeline hook of `flexwatt pipeline profile` (docs/pipeline-profile.md):
a pipeline-parallel rank's forward/backward and step times, as JSON lines in a file (its
docstring gives the record format).
"""

import http.client
import json
import logging
import os
import socket
import threading
import time
import urllib.parse

log = logging.getLogger("flexwatt_client")

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


# Answers that mean the request itself is wrong (the caller's bug): raised even by the per-step
# calls. Every other failure of those calls means "the agent is away" (or unable to serve us
# now): the job keeps its knobs and tries again later.
_REQUEST_ERRORS = (400, 422)
# What the agent being away looks like from here: refused/reset connections, a missing socket,
# timeouts (all OSError), a connection closed mid-answer (http.client), a cut JSON answer.
_AWAY_ERRORS = (OSError, http.client.HTTPException, ValueError)


def _describe(e):
    if isinstance(e, FlexwattError):
        return str(e)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


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
    """timeout_s: wait for an answer (operator calls). resilient (True): jobs survive the agent
    going away (module docstring); step_timeout_s: the wait of a per-step call;
    retry_min_s/retry_max_s: the back-off between tries while the agent is away."""

    def __init__(self, socket_path=None, url=None, token=None, timeout_s=10.0, resilient=True,
                 step_timeout_s=2.0, retry_min_s=0.5, retry_max_s=10.0):
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
        self.resilient = resilient
        self.step_timeout_s = step_timeout_s
        self.retry_min_s = retry_min_s
        self.retry_max_s = max(retry_max_s, retry_min_s)

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

    def register_job(self, id=None, name=None, kind=None, gpus=None, knobs=None, pfi=None,
                     fill=None, pipeline_stages=None):
        """Registers a training job; returns a Job. knobs: {name: {min, max, step?, default?}}.
        pfi: the job's Power Flexibility Index when known (reported in the agent's status).
        fill: the job's fill hook, a callable fill(targets) with targets {NVML index: watts}
        (0: stop), or None (the default: the job runs no fill). With a hook the job registers
        with "fill": true and the agent's `stabilize` controller may ask it to burn power on its
        GPUs (before the start, to ramp the site up smoothly; docs/stabilization.md). The hook
        is called from progress(), wait_knobs() and close() whenever the targets change, and
        with every target 0 when the agent becomes unreachable or the job closes: it must
        return at once (start, retune or stop a fill running in the background).
        gpus: NVML indices as the agent's status lists them, GPU UUIDs ("GPU-..."), or
        "visible": the UUIDs of visible_gpu_uuids() (ValueError when there are none).
        pipeline_stages: a pipeline job's stage per GPU in gpus (one each): the agent's `plan`
        controller then applies this node's share of a plan across nodes (docs/caps.md).
        A 4xx answer raises FlexwattError. When the agent cannot be reached (connection error,
        timeout, 5xx) a resilient client returns the job anyway, at its knobs' defaults, and
        registers it once the agent answers (its id is None until then when none was given)."""
        if gpus == "visible":
            gpus = visible_gpu_uuids()
            if not gpus:
                raise ValueError("gpus='visible': neither CUDA_VISIBLE_DEVICES nor "
                                 "NVIDIA_VISIBLE_DEVICES lists GPU UUIDs; pass the UUIDs "
                                 "(nvidia-smi -L) or the host's NVML indices")
        if fill is not None and not callable(fill):
            raise TypeError("fill: must be a callable fill(targets) or None")
        body = {}
        for k, v in (("id", id), ("name", name), ("kind", kind), ("gpus", gpus), ("knobs", knobs),
                     ("pfi", pfi), ("pipeline_stages", pipeline_stages)):
            if v is not None:
                body[k] = v
        if fill is not None:
            body["fill"] = True
        if not self.resilient:
            return Job(self, self.request("POST", "/v1/jobs", body), fill=fill)
        try:
            answer = self.request("POST", "/v1/jobs", body, timeout_s=self._timeout_s)
        except FlexwattError as e:
            if e.status < 500:
                raise
            return Job._detached(self, body, _describe(e), fill)
        except _AWAY_ERRORS as e:
            return Job._detached(self, body, _describe(e), fill)
        return Job(self, answer, registration=body, fill=fill)


class Job:
    """A registered job: report progress, read the knobs the agent chose. While the agent is
    away, progress() and wait_knobs() keep the knobs last in force (module docstring)."""

    def __init__(self, client, answer, registration=None, fill=None):
        self._client = client
        self.id = answer["id"]
        self.knobs = answer.get("knobs", {})
        self.knob_version = answer.get("knob_version", 0)
        self._fill = fill   # the job's fill hook (register_job), or None
        self.fill_w = {}    # the fill targets last handed to it: {NVML index: W}
        # The site coordinator paused the node's jobs (a demand-response event that caps alone
        # cannot meet): the job should stop training, keep its state, and resume once this is
        # False again (read after each progress() or wait_knobs()).
        self.paused = bool(answer.get("paused", False))
        # The site coordinator's start gate (unix s; 0: none): a job that announced its start
        # (progress(starts_in_s=...)) should not start training before it (wait_start()).
        self.start_at_unix_s = float(answer.get("start_at_unix_s", 0) or 0)
        # Its stop gate (unix s; 0: none): a job that announced its end (progress(ends_in_s=...))
        # should train on (or run its fill) until it, then stop (may_stop(), wait_stop()).
        self.stop_at_unix_s = float(answer.get("stop_at_unix_s", 0) or 0)
        # What re-registration sends (the POST /v1/jobs body); None: the job cannot re-register.
        self._registration = registration
        self._id_given = bool(registration and registration.get("id"))
        self._needs_register = False  # the agent does not know the job (yet, or any more)
        self._away = False            # the agent did not answer the last try
        self._away_since = 0.0
        self._failures = 0
        self._next_try = 0.0
        self._registered_once = True

    @classmethod
    def _detached(cls, client, registration, why, fill=None):
        """A job whose registration could not reach the agent: the ladder's defaults (max
        when none is given) until it registers."""
        knobs = {}
        for name, ladder in (registration.get("knobs") or {}).items():
            if isinstance(ladder, dict) and ("default" in ladder or "max" in ladder):
                knobs[name] = ladder.get("default", ladder.get("max"))
        job = cls(client, {"id": registration.get("id"), "knobs": knobs, "knob_version": 0},
                  registration, fill)
        job._needs_register = True
        job._registered_once = False
        job._lost(why)
        return job

    def _take(self, answer):
        self.knobs = answer["knobs"]
        self.knob_version = answer["knob_version"]
        self.paused = bool(answer.get("paused", False))
        self.start_at_unix_s = float(answer.get("start_at_unix_s", 0) or 0)
        self.stop_at_unix_s = float(answer.get("stop_at_unix_s", 0) or 0)
        targets = answer.get("fill_w")
        if self._fill is not None and isinstance(targets, dict):
            self._set_fill({int(g): float(w) for g, w in targets.items()})
        return self.knobs

    def _set_fill(self, targets):
        """Hands the hook the targets merged into the ones in force, when any changed."""
        merged = dict(self.fill_w)
        merged.update(targets)
        if merged != self.fill_w:
            self.fill_w = merged
            self._fill(dict(merged))

    def _stop_fill(self):
        """Every target 0 (the agent is away, or the job ends): nothing burns unasked."""
        if self._fill is not None and any(w != 0 for w in self.fill_w.values()):
            self._set_fill({g: 0.0 for g in self.fill_w})

    # The agent going away and coming back.
    def _lost(self, why):
        """A try failed: back off (retry_min_s doubling to retry_max_s); log once per absence."""
        c = self._client
        now = time.monotonic()
        self._failures += 1
        self._next_try = now + min(c.retry_max_s, c.retry_min_s * 2 ** min(self._failures - 1, 30))
        if not self._away:
            self._away, self._away_since = True, now
            self._stop_fill()
            log.warning("flexwatt agent unreachable (%s): job %s keeps its knobs %s and carries "
                        "on; retrying with back-off up to %g s", why, self.id or "(unregistered)",
                        self.knobs, c.retry_max_s)
        else:
            log.debug("flexwatt agent still unreachable (%s); next try in %.1f s", why,
                      self._next_try - now)

    def _found(self, registered):
        if self._away:
            log.warning("flexwatt agent is back after %.1f s: job %s %s, knobs %s",
                        time.monotonic() - self._away_since, self.id,
                        ("registered again" if self._registered_once else "registered")
                        if registered else "still registered", self.knobs)
        elif registered:  # it restarted between two calls
            log.warning("flexwatt agent no longer knew job %s (restarted?): registered again, "
                        "knobs %s", self.id, self.knobs)
        self._registered_once = self._registered_once or registered
        self._away = False
        self._failures = 0

    def _registration_body(self):
        """The registration, with the same id, GPUs and knob ladder; each knob's default is the
        value in force, so the agent starts from what the job runs (nothing jumps)."""
        body = dict(self._registration)
        if self.id is not None:
            body["id"] = self.id
        ladders = body.get("knobs")
        if isinstance(ladders, dict):
            body["knobs"] = {}
            for name, ladder in ladders.items():
                ladder = dict(ladder) if isinstance(ladder, dict) else ladder
                v = self.knobs.get(name)
                if (isinstance(ladder, dict) and isinstance(v, (int, float))
                        and not isinstance(v, bool)):
                    lo, hi = ladder.get("min"), ladder.get("max")
                    if isinstance(lo, (int, float)):
                        v = max(lo, v)
                    if isinstance(hi, (int, float)):
                        v = min(hi, v)
                    ladder["default"] = v
                body["knobs"][name] = ladder
        return body

    def _register(self, timeout_s):
        """POST /v1/jobs again. A 409 for an id the caller chose: the job is registered already
        (an earlier try's answer was lost); for an id the agent had assigned: another job has
        it now, so the agent assigns a new one. Other refusals raise (the job stays away)."""
        body = self._registration_body()
        try:
            answer = self._client.request("POST", "/v1/jobs", body, timeout_s=timeout_s)
        except FlexwattError as e:
            if e.status != 409 or "already registered" not in e.message:
                raise
            if self._id_given:
                self._needs_register = False
                self.knob_version = 0  # the agent's versions start again
                return
            del body["id"]
            answer = self._client.request("POST", "/v1/jobs", body, timeout_s=timeout_s)
            log.warning("flexwatt job %s is now %s (its id was taken)", self.id, answer["id"])
        self.id = answer["id"]
        self._take(answer)
        self._needs_register = False

    def _attempt(self, method, path_of, body, timeout_s):
        """One request, (re-)registering first when the agent does not know the job."""
        registered = False
        if self._needs_register:
            self._register(timeout_s)
            registered = True
        try:
            return self._client.request(method, path_of(), body, timeout_s=timeout_s), registered
        except FlexwattError as e:
            if e.status != 404 or self._registration is None or registered:
                raise
        # The agent answers but no longer knows the job: it restarted. Register again.
        self._needs_register = True
        self._register(timeout_s)
        return self._client.request(method, path_of(), body, timeout_s=timeout_s), True

    def _step(self, method, path_of, body, timeout_s):
        """A per-step request: the answer, or None while the agent is away (never raises for
        that; 400/422, the caller's bug, still raise)."""
        if self._away and time.monotonic() < self._next_try:
            return None
        try:
            answer, registered = self._attempt(method, path_of, body, timeout_s)
        except FlexwattError as e:
            if e.status in _REQUEST_ERRORS and not self._needs_register:
                raise
            self._lost(_describe(e))
            return None
        except _AWAY_ERRORS as e:
            self._lost(_describe(e))
            return None
        self._found(registered)
        return answer

    def progress(self, tokens_total, steps_total, phase=None, *, starts_in_s=None,
                 ends_in_s=None, checkpoint_in_iters=None, checkpoint_s=None, step_age_s=None):
        """Reports cumulative progress; returns the knobs in force (the last ones known while
        the agent is away).

        The keyword-only announcements tell the agent what is coming before its power meter
        sees it (the `stabilize` controller acts on them; docs/stabilization.md, "In the
        agent"). Each is optional; None is not sent (unknown to the agent):
          starts_in_s          the job's processes start training in this many seconds
          ends_in_s            ... exit in this many seconds (the scheduled end)
          checkpoint_in_iters  the next checkpoint follows the all-reduce of this many more
                               iterations (a whole number >= 1; 1: the iteration under way)
          checkpoint_s         that checkpoint's expected length in seconds
          step_age_s           the iteration under way began this many seconds ago (its step
                               boundary; a pipeline plan's cap schedule anchors there)
        Seconds are wall seconds, >= 0, as of this call: the agent counts them down (step_age_s
        up) itself until
        the next report. A report replaces the last one's announcements whole, so send them
        with every report while they hold (what a report leaves out is unknown from then on);
        the agent forgets them when the job stops reporting (job_silent_after_s, 60 s by
        default). checkpoint_in_iters is not counted down by the agent: send the new count with
        each report, and checkpoint_s also during the checkpoint (the controller times the
        checkpoint's end from it). A bad value raises FlexwattError (400 or 422, naming the
        field)."""
        body = {"tokens_total": tokens_total, "steps_total": steps_total}
        if phase is not None:
            body["phase"] = phase
        for key, value in (("starts_in_s", starts_in_s), ("ends_in_s", ends_in_s),
                           ("checkpoint_in_iters", checkpoint_in_iters),
                           ("checkpoint_s", checkpoint_s), ("step_age_s", step_age_s)):
            if value is not None:
                body[key] = value
        if not self._client.resilient:
            return self._take(self._client.request("POST", f"/v1/jobs/{self.id}/progress", body))
        answer = self._step("POST", lambda: f"/v1/jobs/{self.id}/progress", body,
                            self._client.step_timeout_s)
        return self.knobs if answer is None else self._take(answer)

    def wait_knobs(self, wait_s):
        """Long-polls until the knobs change from the ones last seen, or wait_s passes.
        Returns (knobs, changed). While the agent is away: the knobs last in force, unchanged,
        after at most wait_s (tries the agent again within it when the back-off allows)."""
        if not self._client.resilient:
            path = f"/v1/jobs/{self.id}/knobs?since={self.knob_version}&wait_s={wait_s:g}"
            answer = self._client.request("GET", path, timeout_s=wait_s + 10)
            self._take(answer)
            return self.knobs, answer["changed"]
        deadline = time.monotonic() + wait_s
        while True:
            left = max(0.0, deadline - time.monotonic())
            answer = self._step(
                "GET",
                lambda: f"/v1/jobs/{self.id}/knobs?since={self.knob_version}&wait_s={left:.3f}",
                None, left + self._client.step_timeout_s)
            if answer is not None:
                self._take(answer)
                return self.knobs, answer["changed"]
            left = deadline - time.monotonic()
            if left <= 0:
                return self.knobs, False
            time.sleep(min(left, max(0.0, self._next_try - time.monotonic())))

    def wait_start(self, tokens_total=0, steps_total=0, starts_in_s=0.0, poll_s=1.0,
                   max_wait_s=3600.0):
        """Before training starts: announces the start (starts_in_s from now, 0: ready now) with
        each report, and returns once the site coordinator's start gate (start_at_unix_s) has
        passed, or at once when there is none. While it waits the job keeps announcing the
        gate's time, so the agent's stabilize controller can ramp the GPUs (its pre-start fill)
        toward it. Returns the seconds waited; gives up after max_wait_s (the gate is the
        coordinator's plan, not a lock: a job that must start does)."""
        return self._wait_gate("start_at_unix_s", "starts_in_s", starts_in_s, "idle",
                               tokens_total, steps_total, poll_s, max_wait_s)

    def may_stop(self):
        """Whether the job may stop training now: True without a stop gate, else once the site
        coordinator's stop gate (stop_at_unix_s, from the last answer) has passed. A job that
        announces its end ahead (progress(ends_in_s=...) with its reports) trains on until
        this is True, so the site's power falls at the coordinator's stop ramp."""
        return not (self.stop_at_unix_s > 0) or time.time() >= self.stop_at_unix_s

    def wait_stop(self, tokens_total=0, steps_total=0, ends_in_s=0.0, poll_s=1.0,
                  max_wait_s=3600.0):
        """At the end of training: announces the end (ends_in_s from now, 0: done now) with each
        report and returns once the stop gate has passed, or at once when there is none (announce
        the end ahead with progress(ends_in_s=...) so that the gate is known by then). A job
        that can train on meanwhile loops on may_stop() instead. Returns the seconds waited;
        gives up after max_wait_s (the gate is the coordinator's plan, not a lock)."""
        return self._wait_gate("stop_at_unix_s", "ends_in_s", ends_in_s, None,
                               tokens_total, steps_total, poll_s, max_wait_s)

    def _wait_gate(self, gate, announce, in_s, phase, tokens_total, steps_total, poll_s,
                   max_wait_s):
        """wait_start() and wait_stop(): reports with the announcement `announce` (the time left
        to the later of now + in_s and the gate, the attribute `gate`) until that time has
        passed or max_wait_s; returns the seconds waited."""
        t0 = time.monotonic()
        own = time.time() + max(0.0, in_s)
        while True:
            left = max(own, getattr(self, gate)) - time.time()
            self.progress(tokens_total, steps_total, phase, **{announce: max(0.0, left)})
            left = max(own, getattr(self, gate)) - time.time()
            if left <= 0 or time.monotonic() - t0 >= max_wait_s:
                return time.monotonic() - t0
            time.sleep(min(poll_s, left, max(0.0, max_wait_s - (time.monotonic() - t0))))

    def set_pfi(self, pfi, source="operator"):
        """Records the job's Power Flexibility Index on the agent (source: sweep, registration,
        operator)."""
        return self._client.request("PUT", f"/v1/jobs/{self.id}/pfi", {"pfi": pfi, "source": source})

    def close(self):
        """Ends the job on the agent (its fill stopped first). A resilient client does not raise
        when the agent is away or no longer knows the job (it has nothing to end then)."""
        self._stop_fill()
        if not self._client.resilient:
            self._client.request("DELETE", f"/v1/jobs/{self.id}")
            return
        if self._needs_register or self.id is None:
            return
        try:
            self._client.request("DELETE", f"/v1/jobs/{self.id}",
                                 timeout_s=self._client.step_timeout_s)
        except (FlexwattError, *_AWAY_ERRORS) as e:
            log.debug("flexwatt job %s: not deregistered (%s)", self.id, _describe(e))


PIPELINE_TIMINGS_FORMAT = "flexwatt-pipeline-timings/1"


class PipelineTimings:
    """A pipeline-parallel rank's hook for `flexwatt pipeline profile` (docs/pipeline-profile.md):
    records when each micro-batch's forward and backward starts and ends on this rank's stage,
    and the step (iteration) boundaries, as JSON lines in `path`. No CUDA and no agent call: each
    record is two monotonic clock reads (time.monotonic_ns) appended to an in-memory list; the
    list is written (appended to the file, one write) every `flush_every` records, at step_end()
    when that many are buffered, at flush() and at close(). Put the hook where the framework's
    schedule calls the op (after the op's input has arrived, before its output is sent); on a
    GPU, synchronise the op's stream before end (or time a synchronised op) so that its end is
    the kernel's end.

        tm = PipelineTimings("/tmp/rank3.jsonl", stage=1, stages=4, gpu=3, pipeline=0)
        for step in range(steps):
            tm.step_start()
            with tm.forward(mb=0):
                ...
            with tm.backward(mb=0):
                ...
            tm.step_end()
        tm.close()

    Records (one JSON object a line; times are integers, ns of time.monotonic_ns):
      {"type": "anchor", "format": "flexwatt-pipeline-timings/1", "unix_s": <time.time()>,
       "mono_ns": <time.monotonic_ns() read beside it>, "stage": s, "stages": S,
       "pipeline": p, "gpu": g, "rank": r}
          first line of every writer (a file appended to by a restarted rank holds several:
          each applies to the records after it). gpu: the host's NVML index of this rank's GPU
          (the `gpu` column of the agent's trace); pipeline: the data-parallel pipeline.
      {"type": "op", "instr": "forward"|"backward", "mb": i, "step": n,
       "start_ns": t0, "end_ns": t1}
      {"type": "step", "step": n, "start_ns": t0, "end_ns": t1}
    An op's unix time is unix_s + (start_ns - mono_ns) / 1e9 of the anchor before it.

    job (optional, on one rank only): a Job of FlexwattClient.register_job(); step_end() then
    reports the steps done (and tokens_per_step each) through Job.progress(), which is what
    `flexwatt pipeline profile --probe --agent` measures the job's throughput by, with the age of
    the step that began at that boundary (step_age_s, read when the report is sent: where the
    agent's `plan` controller anchors a plan's cap schedule). That is the
    hook's only agent call (resilient: it never raises for the agent being away). It runs on a
    background thread, never on the caller's: step_end() only hands over the latest counts (the
    reports are cumulative, so a report still pending when the next step ends is replaced by
    it), and a slow or absent agent does not stall the pipeline's stage. An exception a report
    raised is raised by the next step_end() or by close(); close() waits for the last report
    (at most close_timeout_s).
    """

    def __init__(self, path, stage, stages, gpu, pipeline=0, rank=None, flush_every=512,
                 clock_ns=time.monotonic_ns, wall_s=time.time, job=None, tokens_per_step=0,
                 close_timeout_s=10.0):
        if not (0 <= stage < stages):
            raise ValueError(f"stage {stage} is not in 0..{stages - 1}")
        if gpu < 0 or pipeline < 0:
            raise ValueError("gpu and pipeline are indices (>= 0)")
        self.path = path
        self._clock = clock_ns
        self._flush_every = max(1, int(flush_every))
        self._step = 0
        self._step_start = None
        self._open = {}
        anchor_wall = wall_s()
        anchor_mono = clock_ns()
        self._buf = [json.dumps({"type": "anchor", "format": PIPELINE_TIMINGS_FORMAT,
                                 "unix_s": anchor_wall, "mono_ns": anchor_mono,
                                 "stage": int(stage), "stages": int(stages),
                                 "pipeline": int(pipeline), "gpu": int(gpu),
                                 "rank": int(rank if rank is not None else stage)})]
        self._records = []  # (kind, instr, mb, step, start_ns, end_ns): formatted at flush
        self._job = job
        self._tokens_per_step = tokens_per_step
        self._close_timeout_s = close_timeout_s
        self._cv = threading.Condition()
        self._pending = None  # (tokens_total, steps_total, boundary_ns) not yet reported
        self._closing = False
        self._error = None  # an exception of a report, raised on the caller's thread
        self._reporter = None
        if job is not None:
            self._reporter = threading.Thread(target=self._report_loop, daemon=True,
                                              name="flexwatt-pipeline-progress")
            self._reporter.start()

    def _report_loop(self):
        while True:
            with self._cv:
                while self._pending is None and not self._closing:
                    self._cv.wait()
                if self._pending is None:
                    return
                tokens, steps, boundary_ns = self._pending
                self._pending = None
            try:
                age_s = max(0.0, (self._clock() - boundary_ns) / 1e9)
                self._job.progress(tokens_total=tokens, steps_total=steps, step_age_s=age_s)
            except Exception as e:  # noqa: BLE001 - handed to the caller's thread
                with self._cv:
                    self._error = e

    def _raise_report_error(self):
        with self._cv:
            e, self._error = self._error, None
        if e is not None:
            raise e

    def op_start(self, instr, mb):
        """The op (instr "forward" or "backward") of micro-batch mb starts now."""
        if instr not in ("forward", "backward"):
            raise ValueError(f"instr {instr!r} is not forward or backward")
        self._open[(instr, mb)] = self._clock()

    def op_end(self, instr, mb):
        """The op started by op_start(instr, mb) ends now (ValueError if it never started)."""
        t1 = self._clock()
        try:
            t0 = self._open.pop((instr, mb))
        except KeyError:
            raise ValueError(f"{instr} of micro-batch {mb} ended without a start") from None
        self._records.append(("op", instr, mb, self._step, t0, t1))
        if len(self._records) >= self._flush_every:
            self.flush()

    def forward(self, mb):
        return _TimedOp(self, "forward", mb)

    def backward(self, mb):
        return _TimedOp(self, "backward", mb)

    def step_start(self):
        """An iteration (all micro-batches up to the optimizer step) starts now."""
        self._step_start = self._clock()

    def step_end(self):
        """The iteration started by step_start() ends now (after its optimizer step)."""
        t1 = self._clock()
        if self._step_start is not None:
            self._records.append(("step", None, None, self._step, self._step_start, t1))
        self._step += 1
        self._step_start = None
        if self._reporter is not None:
            with self._cv:
                self._pending = (self._step * self._tokens_per_step, self._step, t1)
                self._cv.notify()
            self._raise_report_error()
        if len(self._records) >= self._flush_every:
            self.flush()

    def flush(self):
        """Appends the buffered records to the file (one write)."""
        lines = self._buf
        for kind, instr, mb, step, t0, t1 in self._records:
            if kind == "op":
                lines.append(f'{{"type": "op", "instr": "{instr}", "mb": {int(mb)}, '
                             f'"step": {step}, "start_ns": {t0}, "end_ns": {t1}}}')
            else:
                lines.append(f'{{"type": "step", "step": {step}, "start_ns": {t0}, '
                             f'"end_ns": {t1}}}')
        self._records = []
        self._buf = []
        if lines:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")

    def close(self):
        """Flushes the records and waits for the last report (at most close_timeout_s)."""
        self.flush()
        if self._reporter is not None:
            with self._cv:
                self._closing = True
                self._cv.notify()
            self._reporter.join(self._close_timeout_s)
            self._raise_report_error()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _TimedOp:
    def __init__(self, timings, instr, mb):
        self._t, self._instr, self._mb = timings, instr, mb

    def __enter__(self):
        self._t.op_start(self._instr, self._mb)
        return self

    def __exit__(self, *exc):
        self._t.op_end(self._instr, self._mb)
        return False
