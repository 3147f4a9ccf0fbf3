"""Which safety properties each protocol claims: the lab's one declarative table.

The checks never name a protocol. A protocol missing from :data:`CLAIMS` (a new one)
is checked for :data:`DEFAULT_CLAIMS`; :func:`claim` adds or replaces an entry (a
plugin or a test registering its own protocol does this), and the command line's
``--claims all`` applies every property to every protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PROPERTIES: tuple[str, ...] = (
    "view_agreement",
    "total_order",
    "integrity",
    "fifo",
    "virtual_synchrony",
    "safe_delivery",
    "mutual_exclusion",
    "single_token",
    "convergence",
    "leader_agreement",
)
"""Every property the lab checks, by the names of the design document."""

DEFAULT_CLAIMS: frozenset[str] = frozenset(
    {"view_agreement", "integrity", "fifo", "convergence", "leader_agreement"}
)
"""What a protocol the table does not know is held to."""

CLAIMS: dict[str, frozenset[str]] = {
    # The baseline: reliable per-sender FIFO and a heartbeat membership; no total
    # order and no view agreement across partitions (the negative control).
    "basic": frozenset({"integrity", "fifo", "convergence"}),
    "raincore": frozenset(
        {
            "view_agreement",
            "total_order",
            "integrity",
            "fifo",
            "mutual_exclusion",
            "single_token",
            "convergence",
            "leader_agreement",
        }
    ),
    "totem": frozenset(
        {
            "view_agreement",
            "total_order",
            "integrity",
            "fifo",
            "virtual_synchrony",
            "safe_delivery",
            "convergence",
            "leader_agreement",
        }
    ),
    "tribes": frozenset({"view_agreement", "convergence", "leader_agreement"}),
    "gms": frozenset({"view_agreement", "convergence", "leader_agreement", "integrity"}),
}

ORDER_SCOPE: dict[str, str] = {"totem": "view"}
"""Scope of total order per protocol: ``view`` compares deliveries made in one
configuration (Totem's extended virtual synchrony), ``run`` (the default) compares
every delivery of a run (Raincore's single token order)."""

TOTAL_ORDERS: dict[str, tuple[str, ...] | None] = {"raincore": None, "basic": None}
"""Delivery orders subject to total order per protocol (None: every delivery); the
default is ``agreed`` and ``safe``."""

DEFAULT_TOTAL_ORDERS: tuple[str, ...] = ("agreed", "safe")

CONVERGE_ON: dict[str, str] = {"raincore": "members"}
"""What "one same configuration" means for convergence: ``view`` (the default: the same
configuration id and members) or ``members`` (the same member set: a Raincore node may
commit an unchanged membership at a global-view index the others skip, so equal
memberships can carry different indexes; index agreement is view_agreement's job)."""


def claims(protocol: str, overrides: Mapping[str, Iterable[str]] | None = None) -> frozenset[str]:
    """The properties ``protocol`` is checked for (``overrides`` first, then the table)."""
    if overrides and protocol in overrides:
        return frozenset(overrides[protocol])
    if overrides and "*" in overrides:
        return frozenset(overrides["*"])
    return CLAIMS.get(protocol, DEFAULT_CLAIMS)


def claim(protocol: str, properties: Iterable[str]) -> None:
    """Declare the properties ``protocol`` claims (replacing any earlier entry)."""
    props = frozenset(properties)
    unknown = sorted(props - set(PROPERTIES))
    if unknown:
        raise ValueError(f"unknown property {unknown[0]!r} (known: {', '.join(PROPERTIES)})")
    CLAIMS[protocol] = props


def parse_claims(text: str) -> dict[str, frozenset[str]]:
    """Parse the command line's ``--claims``: ``all``, or ``proto=p1+p2;proto2=p3``."""
    if text.strip() == "all":
        return {"*": frozenset(PROPERTIES)}
    out: dict[str, frozenset[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        proto, sep, props = part.partition("=")
        if not sep or not proto.strip():
            raise ValueError(f"--claims: expected protocol=prop+prop, got {part!r}")
        names = frozenset(p.strip() for p in props.split("+") if p.strip())
        unknown = sorted(names - set(PROPERTIES))
        if unknown:
            raise ValueError(f"--claims: unknown property {unknown[0]!r}")
        out[proto.strip()] = names
    return out
