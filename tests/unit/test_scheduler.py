"""The analysis scheduler: per document in order, the newest request wins, interactive first."""

from __future__ import annotations

import threading
import time

import pytest

from gdg_lsp.server.scheduler import SUPERSEDED, Scheduler

WAIT = 10


def _blocker():
    started, release = threading.Event(), threading.Event()

    def job():
        started.set()
        assert release.wait(WAIT)
        return "blocked"

    return job, started, release


def test_one_document_runs_in_order_and_two_documents_run_at_once():
    scheduler = Scheduler(max_threads=4)
    job, started, release = _blocker()
    first = scheduler.submit("a", "hover", job)
    assert started.wait(WAIT)
    later = scheduler.submit("a", "completion", lambda: "a-after")
    other = scheduler.submit("b", "hover", lambda: "b")
    assert other.result(WAIT) == "b"  # b does not wait for a's analysis
    time.sleep(0.05)
    assert not later.done()  # a's next job waits for a's running one
    release.set()
    assert first.result(WAIT) == "blocked" and later.result(WAIT) == "a-after"
    scheduler.shutdown()


def test_a_newer_request_of_the_same_kind_supersedes_the_older_one():
    scheduler = Scheduler(max_threads=4)
    job, started, release = _blocker()
    running = scheduler.submit("a", "hover", job)
    assert started.wait(WAIT)
    ran = []
    waiting = scheduler.submit("a", "diagnostics", lambda: ran.append("old") or "old")
    newest = scheduler.submit("a", "diagnostics", lambda: ran.append("new") or "new")
    assert waiting.result(WAIT) is SUPERSEDED  # answered at once, never started
    again = scheduler.submit("a", "hover", lambda: "second hover")
    assert running.result(WAIT) is SUPERSEDED  # nobody waits for the running one any more
    release.set()
    assert newest.result(WAIT) == "new" and again.result(WAIT) == "second hover"
    assert ran == ["new"]
    assert scheduler.stats.superseded == 2
    scheduler.shutdown()


def test_a_thread_is_kept_for_interactive_requests():
    scheduler = Scheduler(max_threads=2)
    job, started, release = _blocker()
    scheduler.submit("x", "diagnostics", job)
    assert started.wait(WAIT)
    ran = threading.Event()
    background = scheduler.submit("y", "diagnostics", ran.set)
    hover = scheduler.submit("z", "hover", lambda: "hover")
    assert hover.result(WAIT) == "hover"  # the one free thread serves it
    time.sleep(0.05)
    assert not ran.is_set()  # the second analysis waits for a background thread
    release.set()
    background.result(WAIT)
    assert ran.is_set()
    scheduler.shutdown()


def test_failures_and_cancellations_leave_the_threads_serving():
    scheduler = Scheduler(max_threads=2)

    def broken():
        raise KeyError("analyzer bug")

    with pytest.raises(KeyError):
        scheduler.submit("a", "hover", broken).result(WAIT)
    job, started, release = _blocker()
    scheduler.submit("a", "hover", job)
    assert started.wait(WAIT)
    ran = []
    cancelled = scheduler.submit("a", "completion", lambda: ran.append(1))
    assert cancelled.cancel()  # $/cancelRequest while it waits
    closed = scheduler.submit("a", "code action", lambda: ran.append(2))
    scheduler.forget("a")  # the document closed
    assert closed.result(WAIT) is SUPERSEDED
    release.set()
    assert scheduler.submit("a", "hover", lambda: "still serving").result(WAIT) == "still serving"
    assert ran == []
    scheduler.shutdown()
    assert scheduler.submit("a", "hover", lambda: 1).result(WAIT) is SUPERSEDED
