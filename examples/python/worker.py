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
  AWA_GRACE           seconds running jobs get to finish after SIGTERM (default: 30);
                      jobs still running then are handed back with awa.snooze
                      (run again soon, attempt not used up) and the worker exits
  AWA_EXIT_WHEN_IDLE  1: exit 0 once the queue has no available, scheduled,
                      retryable or running job (needs awa_monitor, for queue_metrics)

A handler is called as handler(job, stop): `stop` is a threading.Event that
is set when the handler should give up: the job was cancelled (a heartbeat
answered cancel_requested), its attempt is no longer live (stale), or the
grace period after SIGTERM ran out; stop.reason says which. Once it is set,
whatever the handler returns or raises, the worker does not complete the job.

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


class Stop(threading.Event):
    """Passed to every handler: set when the handler should stop; `reason` is
    'cancelled' (awa.cancel), 'stale' (the attempt was rescued or otherwise
    ended) or 'shutdown' (the grace period after SIGTERM ran out)."""

    def __init__(self):
        super().__init__()
        self.reason = None

    def stop(self, reason):
        if not self.is_set():
            self.reason = reason
            self.set()


def log(message):
    print(f"[worker {os.getpid()}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Handlers, by job kind. A handler gets the job (a dict) and a Stop event, and
# returns to complete the job, or raises: PermanentError fails it, Snooze
# snoozes it, any other exception retries it with the error text. A long
# handler checks stop.is_set() (or waits on it) and gives up when it is set.
# ---------------------------------------------------------------------------
HANDLERS = {}


def handler(kind):
    def register(fn):
        HANDLERS[kind] = fn
        return fn
    return register


@handler("example.echo")
def echo(job, stop):
    return job["args"]


@handler("example.flaky")
def flaky(job, stop):
    if job["attempt"] == 1:
        raise RuntimeError("flaky: fails on attempt 1")


@handler("example.fail")
def always_fails(job, stop):
    raise RuntimeError("example.fail always fails")


@handler("example.sleep")
def sleeps(job, stop):
    # Sleeps args.seconds, or until the worker says stop.
    if stop.wait(float(job["args"].get("seconds", 1))):
        log(f"job {job['job_id']} (example.sleep): handler stopped: {stop.reason}")


# ---------------------------------------------------------------------------
# The worker
# ---------------------------------------------------------------------------
def connect(url):
    # autocommit: each call is its own transaction (a claim then commits
    # asynchronously, awa's default); prepare_threshold=None: no server-side
    # prepared statements, which pgbouncer < 1.21 cannot carry in
    # transaction mode.
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


class Running:
    """A job being worked: its attempt, its Stop event, and whether the
    worker has begun ending the attempt (then it is no longer handed back)."""

    def __init__(self, job):
        self.job = job
        self.triple = (job["job_id"], job["run_lease"], job["receipt_id"])
        self.stop = Stop()
        self.ending = False


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
        self.stopped_at = None  # time.monotonic() of the signal
        self.done = threading.Event()  # the worker is exiting
        self.lock = threading.Lock()
        self.running = {}  # job_id -> Running
        self.local = threading.local()
        self.claim_conn = None  # the main thread's connection, while a claim runs on it
        self.pool = ThreadPoolExecutor(max_workers=self.concurrency)

    def conn(self):
        # One connection per thread, reused.
        c = getattr(self.local, "conn", None)
        if c is None or c.closed:
            c = self.local.conn = connect(self.url)
        return c

    def claim(self, n):
        conn = self.conn()
        with self.lock:
            self.claim_conn = conn
        try:
            if self.stopping.is_set():
                return []
            rows = conn.execute(
                "SELECT job_id, run_lease, receipt_id, kind, args, attempt, max_attempts"
                "  FROM awa.claim(%s, %s, make_interval(secs => %s), make_interval(secs => %s))",
                (self.queue, n, self.deadline, self.wait),
            ).fetchall()
        except psycopg.errors.QueryCanceled:
            if self.stopping.is_set():
                log("the waiting claim was cancelled (nothing claimed)")
                return []  # cancelled by the SIGTERM: the claim rolled back, nothing claimed
            raise
        finally:
            with self.lock:
                self.claim_conn = None
        keys = ("job_id", "run_lease", "receipt_id", "kind", "args", "attempt", "max_attempts")
        return [dict(zip(keys, row)) for row in rows]

    def cancel_claim(self):
        # After SIGTERM, a claim waiting in the server is cancelled (it rolls
        # back: no job is claimed), so the worker need not wait AWA_WAIT.
        # Repeated until the main thread leaves the claim loop, in case the
        # cancel arrived between two statements.
        self.stopping.wait()
        while not self.done.is_set() and not self.claim_loop_left.is_set():
            with self.lock:
                conn = self.claim_conn
            if conn is not None:
                try:
                    conn.cancel()
                except psycopg.Error:
                    pass
            self.claim_loop_left.wait(0.2)

    def queue_is_idle(self):
        row = self.conn().execute(
            "SELECT available + scheduled + retryable + running FROM awa.queue_metrics() WHERE queue = %s",
            (self.queue,),
        ).fetchone()
        return row is None or row[0] == 0

    def run_job(self, r):
        job = r.job
        try:
            fn = HANDLERS.get(job["kind"])
            if fn is None:
                raise PermanentError(f"no handler for kind {job['kind']!r}")
            fn(job, r.stop)
            sql, params = "SELECT awa.complete(%s, %s, %s)", r.triple
        except Snooze as s:
            sql, params = "SELECT awa.snooze(%s, %s, %s, make_interval(secs => %s))", r.triple + (s.seconds,)
        except PermanentError as e:
            sql, params = "SELECT awa.fail(%s, %s, %s, %s)", r.triple + (str(e),)
        except Exception as e:  # noqa: BLE001 - any handler error is a retry
            text = "".join(traceback.format_exception_only(type(e), e)).strip()
            sql, params = "SELECT awa.retry(%s, %s, %s, %s)", r.triple + (text,)
        with self.lock:
            stopped = r.stop.is_set()
            r.ending = not stopped
            if stopped:
                self.running.pop(job["job_id"], None)
        if stopped:
            # Cancelled or stale: awa already closed the attempt, nothing to
            # call. Shutdown: the main thread hands the job back.
            log(f"job {job['job_id']} ({job['kind']}, attempt {job['attempt']}): not ended by the worker ({r.stop.reason})")
            return
        try:
            outcome = self.conn().execute(sql, params).fetchone()[0]
            log(f"job {job['job_id']} ({job['kind']}, attempt {job['attempt']}): {sql.split('(')[0][11:]} -> {outcome}")
        except psycopg.Error as e:
            # The attempt stays open; awa rescues it after its deadline.
            log(f"job {job['job_id']}: could not end the attempt: {e}")
            self.local.conn = None
        finally:
            with self.lock:
                self.running.pop(job["job_id"], None)

    def heartbeats(self):
        # Every AWA_HEARTBEAT seconds, one heartbeat_many for every running
        # job, on a connection of its own, until the worker is done. An answer
        # other than alive (cancel_requested, stale) tells the job's handler
        # to stop.
        conn = None
        while not self.done.wait(self.heartbeat_every):
            with self.lock:
                beating = [r for r in self.running.values() if not r.stop.is_set() and not r.ending]
            if not beating:
                continue
            try:
                if conn is None or conn.closed:
                    conn = connect(self.url)
                rows = conn.execute(
                    "SELECT job_id, run_lease, status FROM awa.heartbeat_many(%s, %s, %s)",
                    ([r.triple[0] for r in beating], [r.triple[1] for r in beating], [r.triple[2] for r in beating]),
                ).fetchall()
            except psycopg.Error as e:
                log(f"heartbeat failed: {e}")
                conn = None
                continue
            for r, (job_id, run_lease, status) in zip(beating, rows):
                if status != "alive":
                    log(f"job {job_id}: heartbeat answered {status}: stopping its handler")
                    r.stop.stop("cancelled" if status == "cancel_requested" else "stale")

    def hand_back(self, triples, why):
        # Ends attempts the worker will not finish with awa.snooze(delay 0):
        # the job is claimable again as soon as it is promoted, and the
        # attempt is given back (the job did nothing wrong).
        # A connection of its own: the main thread's may still receive a
        # cancel meant for its last claim.
        try:
            with connect(self.url) as conn:
                for t in triples:
                    outcome = conn.execute("SELECT awa.snooze(%s, %s, %s, interval '0')", t).fetchone()[0]
                    log(f"job {t[0]}: {why}: handed back (snooze -> {outcome})")
        except psycopg.Error as e:
            log(f"could not hand jobs back ({e}); awa rescues them after their deadline")

    def on_signal(self, *_):
        if not self.stopping.is_set():
            self.stopped_at = time.monotonic()
            self.stopping.set()

    def run(self):
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        self.claim_loop_left = threading.Event()
        threading.Thread(target=self.heartbeats, daemon=True).start()
        threading.Thread(target=self.cancel_claim, daemon=True).start()
        log(f"working queue {self.queue!r}, {self.concurrency} at once")
        while not self.stopping.is_set():
            with self.lock:
                free = self.concurrency - len(self.running)
            if free <= 0:
                time.sleep(0.01)
                continue
            try:
                jobs = self.claim(free)
            except psycopg.Error as e:
                log(f"claim failed: {e}; retrying in 1 s")
                self.local.conn = None
                time.sleep(1)
                continue
            if self.stopping.is_set() and jobs:
                # Claimed as the signal came: not started, handed back at once.
                self.hand_back([(j["job_id"], j["run_lease"], j["receipt_id"]) for j in jobs], "claimed after SIGTERM")
                break
            for job in jobs:
                r = Running(job)
                with self.lock:
                    self.running[job["job_id"]] = r
                self.pool.submit(self.run_job, r)
            if not jobs and self.exit_when_idle:
                with self.lock:
                    busy = bool(self.running)
                if not busy and self.queue_is_idle():
                    log("the queue is idle: exiting")
                    break
        self.claim_loop_left.set()
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
        self.stopping.set()
        # Stop claiming; let running jobs finish within the grace period,
        # counted from the signal.
        with self.lock:
            log(f"stopped claiming; {len(self.running)} job(s) running")
        until = self.stopped_at + self.grace
        while time.monotonic() < until:
            with self.lock:
                if not self.running:
                    break
            time.sleep(0.05)
        # The grace period is over: every job whose attempt the worker has
        # not begun to end is stopped and handed back.
        with self.lock:
            left = [r for r in self.running.values() if not r.ending]
            for r in left:
                r.stop.stop("shutdown")
        if left:
            log(f"{len(left)} job(s) still running after the grace period ({self.grace:g} s)")
            self.hand_back([r.triple for r in left], "grace period over")
        # Attempts being ended right now get a moment to finish their call.
        until = time.monotonic() + 5
        while time.monotonic() < until:
            with self.lock:
                if not any(r.ending for r in self.running.values()):
                    break
            time.sleep(0.05)
        self.done.set()
        if left:
            # Handler threads cannot be killed, and the interpreter would
            # wait for them at exit: leave at once (stdio is flushed).
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        self.pool.shutdown(wait=True)
        return 0


if __name__ == "__main__":
    sys.exit(Worker().run())
