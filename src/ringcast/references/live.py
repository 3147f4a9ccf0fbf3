"""Reference systems as the nodes of a live run (``ringcast live SCENARIO --system NAME``).

The live driver (:mod:`ringcast.live.driver`) runs a reference as it runs ringcast's
nodes: the same namespaces, nemesis, start gates and trace layout. What differs is the
process it starts for a node: ``python -m ringcast.references.member`` in the node's
namespace, which waits at the node's gate like a ``ringcast node``, then starts what
the reference needs on that node (corosync's daemon; nothing more for the Java ones)
and its recorder with the node's workload, and stops them when told (SIGTERM: the run
is over; SIGINT: the member leaves the group). Everything it starts is in its process
group, so the nemesis's ``kill -9`` and SIGSTOP reach the whole node.

Each reference package declares how it runs as a member (:class:`Member` under the
name ``MEMBER``): what of a scenario it refuses, the files it needs for the whole run,
and the recorder's arguments. This module holds what they share.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ringcast.live.tools import LiveError
from ringcast.references import REFERENCES
from ringcast.runtime.liverun import Planned
from ringcast.sim.scenario import Scenario

RINGCAST = "ringcast"
FOREVER_S = 10 * 24 * 3600.0
"""A workload with no end sends until the member stops."""
SETUP = "system.json"
"""In the run's ``_live/``: what every member of a reference needs (:class:`Setup`)."""


@dataclass(frozen=True)
class Setup:
    """What the driver tells every member of a reference run."""

    system: str
    run: str
    trace_dir: str
    state_root: str
    nodes: dict[str, str]
    """Node -> its address on the run's network."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The reference's own settings for this run (e.g. corosync's token timeout)."""

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    @classmethod
    def read(cls, path: Path) -> Setup:
        return cls(**json.loads(path.read_text()))

    def node_id(self, node: str) -> int:
        """The node's number (1, 2, ...: its place in the scenario's nodes)."""
        return list(self.nodes).index(node) + 1


@dataclass(frozen=True)
class Workload:
    """The one multicast workload a member sends (times on the monotonic clock)."""

    rate: float = 0.0
    size: int = 100
    from_ns: int = 0
    seconds: float = 0.0
    """How long it sends (0: it sends nothing)."""

    def arguments(self) -> list[str]:
        return [
            "--rate",
            f"{self.rate:g}",
            "--size",
            str(self.size),
            "--from-ns",
            str(self.from_ns),
            "--seconds",
            f"{self.seconds:.6f}",
        ]


@dataclass(frozen=True)
class Member:
    """How one reference system runs as a live run's member (its package's ``MEMBER``)."""

    module: str
    """The package whose ``__main__.main(argv)`` records a member."""
    settings: Callable[[Scenario], dict[str, Any]] = lambda sc: {}
    """The reference's settings for the run, from the scenario's."""
    refuse: Callable[[Scenario], str | None] = lambda sc: None
    """What of the scenario the reference cannot run (None: it can)."""
    prepare: Callable[[Path, Setup], None] = lambda work, setup: None
    """Write the files every member needs (into the run's ``_live/``)."""
    arguments: Callable[[str, Setup], list[str]] = lambda node, setup: []
    """The recorder wrapper's options of a node beyond the common ones."""
    daemon: Callable[[str, Setup, Path], Sequence[str] | None] = lambda n, s, d: None
    """The command of what must run on a node before its recorder (None: nothing);
    given the node's state directory."""
    multicast_route: bool = False
    """Route IP multicast out of the node's interface (multicast membership)."""


def systems() -> tuple[str, ...]:
    """The names ``ringcast live --system`` takes."""
    return (RINGCAST, *REFERENCES)


def member(system: str) -> Member:
    """The :class:`Member` of reference ``system``; :class:`LiveError` naming the
    choices for an unknown one."""
    module = REFERENCES.get(system)
    if module is None:
        raise LiveError(f"--system {system!r}: expected one of {', '.join(systems())}")
    found: Member = importlib.import_module(module).MEMBER
    return found


def check(system: str, sc: Scenario) -> None:
    """Refuse, before anything is made, a scenario ``system`` cannot run."""
    m = member(system)
    src = sc.source
    if sc.network.networks != 1:
        raise LiveError(
            f"{src}: network.networks = {sc.network.networks}: a reference system runs "
            "on one network in a live run"
        )
    for i, wl in enumerate(sc.workloads):
        where = f"{src}: workload[{i}]"
        if wl.kind != "multicast":
            raise LiveError(f"{where}.kind: {system} is given multicast workloads only")
        if wl.count is not None and wl.rate == 0:
            raise LiveError(
                f"{where}.count: {system}'s recorder sends for a time, not a count, "
                "when it saturates (rate = 0); give a duration"
            )
    for n in sc.all_nodes:
        windows = {(wl.start, wl.duration, wl.count) for wl in sc.workloads if n in wl.nodes}
        if len(windows) > 1:
            raise LiveError(
                f"{src}: node {n}'s workloads start or end apart; {system}'s recorder "
                "sends one stream (workloads of one window are sent as one, their rates "
                "added)"
            )
    why = m.refuse(sc)
    if why is not None:
        raise LiveError(f"{src}: {why}")


def workload(plans: Sequence[Planned], origin_ns: int) -> Workload:
    """The workload a member sends, from the plans the driver wrote for its node: from
    the run's origin plus the workloads' start, for their duration, their count at
    their rate, or to the end. Workloads of one window (all :func:`check` lets through)
    are one stream at their added rates (flat out if one is), of the largest size; the
    recorder multicasts in its system's own order, whatever order each asked for."""
    if not plans:
        return Workload()
    p = plans[0]
    rate = 0.0 if any(q.rate == 0 for q in plans) else sum(q.rate for q in plans)
    if p.duration_ns is not None:
        seconds = p.duration_ns / 1e9
    elif p.count is not None and p.rate > 0:
        seconds = p.count / p.rate
    else:
        seconds = FOREVER_S
    return Workload(rate, max(q.size for q in plans), origin_ns + p.start_ns, seconds)


def prepare(system: str, work: Path, sc: Scenario, run: str, addresses: dict[str, str]) -> Path:
    """Write what the members of ``system`` need for the run into ``work``; the path of
    the setup file the member command reads."""
    m = member(system)
    setup = Setup(
        system=system,
        run=run,
        trace_dir=str(work / "trace"),
        state_root=str(work / "state"),
        nodes=dict(addresses),
        settings=m.settings(sc),
    )
    m.prepare(work, setup)
    path = work / SETUP
    setup.write(path)
    return path


def command(setup: Path, node: str, live_dir: Path) -> list[str]:
    """The arguments of ``python -m ringcast.references.member`` for one incarnation."""
    return [
        "-m",
        "ringcast.references.member",
        "--setup",
        str(setup),
        "--node",
        node,
        "--live-dir",
        str(live_dir),
    ]
