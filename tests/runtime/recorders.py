"""Helpers of the reference systems' tests (not a test module): the recorders' JSON logs
read as a node's ("view installed", and "delivered" every 50 deliveries)."""

from __future__ import annotations

from .conftest import LogWatch


def delivered_so_far(log: LogWatch) -> int:
    """The deliveries the recorder's log reports so far (every 50)."""
    log.refresh()
    counts = [r["delivered"] for r in log.records if r.get("msg") == "delivered"]
    return max(counts, default=0)


def await_delivered(log: LogWatch, least: int, timeout: float) -> None:
    """Until the recorder's log reports at least ``least`` deliveries."""
    log.wait_for(
        lambda recs: any(r.get("msg") == "delivered" and r["delivered"] >= least for r in recs),
        timeout,
        f"{least} deliveries",
    )
