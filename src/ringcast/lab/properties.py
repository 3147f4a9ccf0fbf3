"""Which properties each protocol claims, read from the protocol's own spec.

The checks never name a protocol: what a protocol claims, the scope of its total
order, the delivery orders that total order covers and what convergence compares are
fields of its :class:`~ringcast.protocols.registry.ProtocolSpec`, declared in its
package. :func:`claim` overrides a protocol's claims for this process (a test or a
plugin that wants a different set), and the command line's ``--claims`` does the same
for one check. A protocol that is not registered here (a trace of a plugin this
process has not installed) is held to :data:`DEFAULT_CLAIMS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ringcast import references
from ringcast.protocols import registry
from ringcast.protocols.registry import DEFAULT_CLAIMS, PROPERTIES, ProtocolSpec

__all__ = [
    "DEFAULT_CLAIMS",
    "DEFAULT_TOTAL_ORDERS",
    "PROPERTIES",
    "claim",
    "claims",
    "converge_on",
    "declares_kind",
    "order_scope",
    "parse_claims",
    "total_orders",
]

DEFAULT_TOTAL_ORDERS: tuple[str, ...] = ("agreed", "safe")

_OVERRIDES: dict[str, frozenset[str]] = {}


def _spec(protocol: str) -> ProtocolSpec | None:
    """The protocol's spec: a family's, or a reference system's (ringcast.references)."""
    try:
        return registry.get(protocol)
    except ValueError:
        return references.get(protocol)


def claims(protocol: str, overrides: Mapping[str, Iterable[str]] | None = None) -> frozenset[str]:
    """The properties ``protocol`` is checked for: ``overrides`` first, then
    :func:`claim`, then its spec's ``claims``, then :data:`DEFAULT_CLAIMS`."""
    if overrides and protocol in overrides:
        return frozenset(overrides[protocol])
    if overrides and "*" in overrides:
        return frozenset(overrides["*"])
    if protocol in _OVERRIDES:
        return _OVERRIDES[protocol]
    spec = _spec(protocol)
    return spec.claims if spec is not None else DEFAULT_CLAIMS


def order_scope(protocol: str) -> str:
    """``view`` (total order among the deliveries of one configuration) or ``run``."""
    spec = _spec(protocol)
    return spec.order_scope if spec is not None else "run"


def total_orders(protocol: str) -> tuple[str, ...] | None:
    """The delivery orders total order covers (None: every delivery)."""
    spec = _spec(protocol)
    return spec.total_orders if spec is not None else DEFAULT_TOTAL_ORDERS


def converge_on(protocol: str) -> str:
    """``view`` (the same configuration id and members) or ``members`` (member set)."""
    spec = _spec(protocol)
    return spec.converge_on if spec is not None else "view"


def detection_timeout(protocol: str) -> int | None:
    """The failure-detection timeout (ns) of ``protocol`` at its default settings, as its
    registration exposes it (None: it has none, or it is not registered here)."""
    spec = _spec(protocol)
    return spec.timeout_ns({}) if spec is not None else None


def declares_kind(protocol: str, kind: str) -> bool:
    """Whether ``protocol``'s runs can hold rows of ``kind``: a host kind, or one of its
    spec's ``trace_kinds``. A protocol not registered here may write any kind."""
    spec = _spec(protocol)
    return spec is None or kind in spec.kinds


def claim(protocol: str, properties: Iterable[str]) -> None:
    """Override the properties ``protocol`` claims in this process."""
    props = frozenset(properties)
    unknown = sorted(props - set(PROPERTIES))
    if unknown:
        raise ValueError(f"unknown property {unknown[0]!r} (known: {', '.join(PROPERTIES)})")
    _OVERRIDES[protocol] = props


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
