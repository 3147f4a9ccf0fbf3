"""A scenario's schedule moved later, so that its nodes settle first.

A live run boots its nodes at the scenario's 0. A system whose nodes take seconds to
start and find each other (a JVM, corosync's first ring) would meet the scenario's
first faults before it had formed a group, which measures its start, not its handling
of the faults. ``ringcast live --settle D`` (and the side-by-side bench) moves every
workload start and nemesis action, and the end, ``D`` later; the nodes still boot at 0.
The simulator runs the same moved scenario when the two are compared.
"""

from __future__ import annotations

from dataclasses import replace

from ringcast.sim.scenario import Scenario


def settled(sc: Scenario, settle_ns: int) -> Scenario:
    """``sc`` with its workloads, nemesis and end ``settle_ns`` later."""
    if settle_ns < 0:
        raise ValueError(f"settle time {settle_ns} ns: expected >= 0")
    if settle_ns == 0:
        return sc
    return replace(
        sc,
        duration=sc.duration + settle_ns,
        workloads=tuple(replace(w, start=w.start + settle_ns) for w in sc.workloads),
        nemesis=tuple(replace(a, at=a.at + settle_ns) for a in sc.nemesis),
    )
