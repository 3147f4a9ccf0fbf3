"""Whether a local cluster holds its view: the regular views each node of a runtime
trace installed, before and after a moment (a ``kill -9``). Used by
``bench/cluster_steady.py`` and the runtime tests of a cluster that must not flap."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ringcast.trace import read_trace


@dataclass(frozen=True)
class Installed:
    """One regular view as a node installed it."""

    node: str
    t: int
    """ns since the cluster's origin"""
    view: str
    members: frozenset[str]


def installed_views(trace_dir: Path) -> dict[str, list[Installed]]:
    """Per node, the regular (not transitional) views of its trace, in order."""
    table = read_trace(trace_dir)
    cols = {c: table.column(c).to_pylist() for c in ("node", "t", "i", "kind", "view")}
    members = table.column("members").to_pylist()
    transitional = table.column("transitional").to_pylist()
    out: dict[str, list[Installed]] = {}
    order = sorted(range(table.num_rows), key=lambda k: (cols["node"][k], cols["i"][k]))
    for k in order:
        if cols["kind"][k] != "view" or transitional[k]:
            continue
        node = str(cols["node"][k])
        out.setdefault(node, []).append(
            Installed(node, int(cols["t"][k]), str(cols["view"][k]), frozenset(members[k] or ()))
        )
    return out


@dataclass(frozen=True)
class Verdict:
    """How a cluster's views went: at start (before ``split``) and after it."""

    start: dict[str, int]
    """per node, the regular views installed before ``split``"""
    after: dict[str, int]
    """per surviving node, those installed at or after ``split``"""
    formed: bool
    """every node's last view before ``split`` is one view of all of them"""
    settled: bool
    """every survivor's last view is one view of the survivors"""

    @property
    def extra_at_start(self) -> int:
        """Views beyond the one each node should install at start (most of any node)."""
        return max((v - 1 for v in self.start.values()), default=0)

    @property
    def extra_after(self) -> int:
        """Views beyond the one a crash should give (most of any survivor)."""
        return max((v - 1 for v in self.after.values()), default=0)


def judge(
    views: dict[str, list[Installed]],
    nodes: list[str],
    split: int | None,
    killed: str | None,
    until: int | None = None,
) -> Verdict:
    """The :class:`Verdict` of ``views`` for a cluster of ``nodes`` (``killed`` killed
    at ``split`` ns; ``None``: no kill, everything is the start), up to ``until`` ns
    (when the cluster was told to stop: the views of nodes leaving one by one are not
    flaps)."""
    if until is not None:
        views = {n: [v for v in vs if v.t < until] for n, vs in views.items()}
    cut = split if split is not None else 2**63
    everyone = frozenset(nodes)
    survivors = [n for n in nodes if n != killed]
    # a killed node's last trace segment may be lost with it: judged on what it wrote
    present = [n for n in nodes if n != killed or views.get(n)]
    start = {n: sum(v.t < cut for v in views.get(n, [])) for n in present}
    lasts = [[v for v in views.get(n, []) if v.t < cut][-1:] for n in present]
    formed = all(ls and ls[0].members == everyone for ls in lasts) and (
        len({ls[0].view for ls in lasts if ls}) == 1
    )
    after = {n: sum(v.t >= cut for v in views.get(n, [])) for n in survivors} if split else {}
    settled = True
    if split is not None:
        finals = [views.get(n, [])[-1:] for n in survivors]
        settled = all(f and f[0].members == frozenset(survivors) for f in finals) and (
            len({f[0].view for f in finals if f}) == 1
        )
    return Verdict(start, after, formed, settled)
