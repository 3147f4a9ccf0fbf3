"""Reference systems: the implementations the seeds describe, run for real beside
ringcast's families and recorded in the same trace schema (corosync's CPG for Totem, Tomcat's
NonBlockingCoordinator for Tribes, JGroups for GMS).

Each is one package here with a ``SPEC`` (a
:class:`~ringcast.protocols.registry.ProtocolSpec` that cannot be simulated) declaring
what it claims; a trace whose protocol names a reference is held to exactly that.
"""

from __future__ import annotations

import importlib

from ringcast.protocols.registry import ProtocolSpec

REFERENCES: dict[str, str] = {
    "corosync": "ringcast.references.corosync",
    "tomcat-tribes": "ringcast.references.tribes",
    "jgroups": "ringcast.references.jgroups",
}
"""Reference name -> the module holding its ``SPEC``."""


def get(name: str) -> ProtocolSpec | None:
    """The spec of reference system ``name``, or None if there is none of that name."""
    module = REFERENCES.get(name)
    if module is None:
        return None
    spec: ProtocolSpec = importlib.import_module(module).SPEC
    return spec
