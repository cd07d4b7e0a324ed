#!/usr/bin/python3
"""An awa worker in Python (psycopg 3): claims jobs with a server-side wait,
runs them AWA_CONCURRENCY at a time, heartbeats while they run, and ends each
attempt with complete, retry, fail or snooze. See README.md beside it.

Environment:
  DATABASE_URL        libpq URI (required), e.g. postgresql://app@localhost:5432/app
  AWA_QUEUE           queue to work (default: default)
  AWA_CONCURRENCY     jobs at once (default: 4)
  AWA_WAIT            seconds a claim waits in the server for work (default: 5)
  AWA_DEADLINE        seconds an attempt may run before awa rescues it (default: 300)
  AWA_HEARTBEAT       seconds between heartbeats of running jobs (default: 10)
  AWA_GRACE           seconds running jobs get to finish after SIGTERM (default: 30)
  AWA_EXIT_WHEN_IDLE  1: exit 0 once the queue has no available, scheduled,
                      retryable or running job (needs awa_monitor, for queue_metrics)

Behind pgbouncer in transaction pooling mode (< 1.21) nothing changes but the
URL: every call is one statement in its own transaction, and prepared
statements are off (prepare_threshold=None).
"""

import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import psycopg


class PermanentError(Exception):
    """Raised by a handler: the job fails now (no retry)."""


class Snooze(Exception):
    """Raised by a handler: run the job again after `seconds`, without using an attempt."""

    def __init__(self, seconds):
        super().__init__(f"snooze {seconds}s")
        self.seconds = seconds


# ---------------------------------------------------------------------------
# Handlers, by job kind. A handler gets the job (a dict) and returns to
# complete it, or raises: PermanentError fails it, Snooze snoozes it, any
# other exception retries it with the error text.
# ---------------------------------------------------------------------------
HANDLERS = {}


def handler(kind):
    def register(fn):
        HANDLERS[kind] = fn
        return fn
    return register


@handler("example.echo")
def echo(job):
    return job["args"]


@handler("example.flaky")
def flaky(job):
    if job["attempt"] == 1:
        raise RuntimeError("flaky: fails on attempt 1")


@handler("example.fail")
def always_fails(job):
    raise RuntimeError("example.fail always fails")


@handler("example.sleep")
def sleeps(job):
    time.sleep(float(job["args"].get("seconds", 1)))


# ---------------------------------------------------------------------------
# The worker
# ---------------------------------------------------------------------------
def connect(url):
    # autocommit: each call is its own transaction (a claim then commits
    # asynchronously, awa's default); prepare_threshold=None: no server-side
    # prepared statements, which pgbouncer < 1.21 cannot carry in
    # transaction mode.
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


class Worker:
    def __init__(self):
        self.url = os.environ["DATABASE_URL"]
        self.queue = os.environ.get("AWA_QUEUE", "default")
        self.concurrency = int(os.environ.get("AWA_CONCURRENCY", "4"))
        self.wait = float(os.environ.get("AWA_WAIT", "5"))
        self.deadline = float(os.environ.get("AWA_DEADLINE", "300"))
        self.heartbeat_every = float(os.environ.get("AWA_HEARTBEAT", "10"))
        self.grace = float(os.environ.get("AWA_GRACE", "30"))
        self.exit_when_idle = os.environ.get("AWA_EXIT_WHEN_IDLE") == "1"
        self.stopping = threading.Event()  # SIGTERM: claim no more
        self.done = threading.Event()  # the worker is exiting
        self.lock = threading.Lock()
        self.running = {}  # job_id -> (job_id, run_lease, receipt_id)
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(max_workers=self.concurrency)

    def conn(self):
        # One connection per thread, reused.
        c = getattr(self.local, "conn", None)
        if c is None or c.closed:
            c = self.local.conn = connect(self.url)
        return c

    def log(self, message):
        print(f"[worker {os.getpid()}] {message}", file=sys.stderr, flush=True)

    def claim(self, n):
        rows = self.conn().execute(
            "SELECT job_id, run_lease, receipt_id, kind, args, attempt, max_attempts"
            "  FROM awa.claim(%s, %s, make_interval(secs => %s), make_interval(secs => %s))",
            (self.queue, n, self.deadline, self.wait),
        ).fetchall()
        keys = ("job_id", "run_lease", "receipt_id", "kind", "args", "attempt", "max_attempts")
        return [dict(zip(keys, row)) for row in rows]

    def queue_is_idle(self):
        row = self.conn().execute(
            "SELECT available + scheduled + retryable + running FROM awa.queue_metrics() WHERE queue = %s",
            (self.queue,),
        ).fetchone()
        return row is None or row[0] == 0

    def run_job(self, job):
        triple = (job["job_id"], job["run_lease"], job["receipt_id"])
        try:
            fn = HANDLERS.get(job["kind"])
            if fn is None:
                raise PermanentError(f"no handler for kind {job['kind']!r}")
            fn(job)
            sql, params = "SELECT awa.complete(%s, %s, %s)", triple
        except Snooze as s:
            sql, params = "SELECT awa.snooze(%s, %s, %s, make_interval(secs => %s))", triple + (s.seconds,)
        except PermanentError as e:
            sql, params = "SELECT awa.fail(%s, %s, %s, %s)", triple + (str(e),)
        except Exception as e:  # noqa: BLE001 - any handler error is a retry
            text = "".join(traceback.format_exception_only(type(e), e)).strip()
            sql, params = "SELECT awa.retry(%s, %s, %s, %s)", triple + (text,)
        try:
            outcome = self.conn().execute(sql, params).fetchone()[0]
            self.log(f"job {job['job_id']} ({job['kind']}, attempt {job['attempt']}): {sql.split('(')[0][11:]} -> {outcome}")
        except psycopg.Error as e:
            # The attempt stays open; awa rescues it after its deadline.
            self.log(f"job {job['job_id']}: could not end the attempt: {e}")
            self.local.conn = None
        finally:
            with self.lock:
                self.running.pop(job["job_id"], None)

    def heartbeats(self):
        # Every AWA_HEARTBEAT seconds, one heartbeat_many for every running
        # job, on a connection of its own, until the worker is done.
        conn = None
        while not self.done.wait(self.heartbeat_every):
            with self.lock:
                triples = list(self.running.values())
            if not triples:
                continue
            try:
                if conn is None or conn.closed:
                    conn = connect(self.url)
                conn.execute(
                    "SELECT * FROM awa.heartbeat_many(%s, %s, %s)",
                    ([t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]),
                )
            except psycopg.Error as e:
                self.log(f"heartbeat failed: {e}")
                conn = None

    def run(self):
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self.stopping.set())
        beat = threading.Thread(target=self.heartbeats, daemon=True)
        beat.start()
        self.log(f"working queue {self.queue!r}, {self.concurrency} at once")
        while not self.stopping.is_set():
            with self.lock:
                free = self.concurrency - len(self.running)
            if free <= 0:
                time.sleep(0.01)
                continue
            try:
                jobs = self.claim(free)
            except psycopg.Error as e:
                self.log(f"claim failed: {e}; retrying in 1 s")
                self.local.conn = None
                time.sleep(1)
                continue
            for job in jobs:
                with self.lock:
                    self.running[job["job_id"]] = (job["job_id"], job["run_lease"], job["receipt_id"])
                self.pool.submit(self.run_job, job)
            if not jobs and self.exit_when_idle:
                with self.lock:
                    busy = bool(self.running)
                if not busy and self.queue_is_idle():
                    self.log("the queue is idle: exiting")
                    break
        # Stop claiming; let running jobs finish within the grace period.
        self.stopping.set()
        with self.lock:
            self.log(f"stopped claiming; {len(self.running)} job(s) running")
        until = time.monotonic() + self.grace
        while time.monotonic() < until:
            with self.lock:
                if not self.running:
                    break
            time.sleep(0.05)
        with self.lock:
            left = len(self.running)
        if left:
            self.log(f"{left} job(s) still running after the grace period; awa rescues them after their deadline")
        self.done.set()
        self.pool.shutdown(wait=False, cancel_futures=True)
        return 0


if __name__ == "__main__":
    sys.exit(Worker().run())
