"""JGroups 2.12 as a reference system: members of a JGroups group on its default UDP
stack, recorded in ringcast's trace schema, so that the lab checks JGroups' histories
with the checks it holds ringcast's ``gms`` family to.

ringcast's ``gms`` implements JGroups' group membership and the reliable view
installation of JGRP-136; this runs JGroups itself (Debian's ``libjgroups-java``,
JGroups 2.12.2, whose default stack ``udp.xml`` has GMS with view acknowledgements,
MERGE2 and NAKACK). What the lab holds its traces to (:data:`SPEC`): view agreement,
one coordinator per view (the view's first member), integrity and FIFO order per
sender (NAKACK's).

The recorder is a small Java program written for ringcast (``JGroupsRecorder.java``
beside this file; nothing of JGroups' code), compiled with ``javac`` at first use into a
cache. Its views are named as JGroups names them, by the view id's creator and number
(``n1:3``); the member names are the channels' logical names.
"""

from __future__ import annotations

from pathlib import Path

from ringcast.references import java
from ringcast.references.install import ReferenceUnavailable, reference_spec
from ringcast.references.live import Member

__all__ = [
    "JARS",
    "MEMBER",
    "NAME",
    "SPEC",
    "ReferenceUnavailable",
    "build",
]

NAME = "jgroups"
SOURCE = Path(__file__).with_name("JGroupsRecorder.java")
JARS = ("/usr/share/java/jgroups.jar",)


FD_TIMEOUT_NS = 3_000_000_000
"""The FD protocol's timeout in JGroups 2.12's default stack (``udp.xml``): the
failure-detection timeout convergence is bounded in (FD_SOCK sees a killed member's
socket close sooner)."""


SPEC = reference_spec(
    NAME,
    "JGroups 2.12 on its default UDP stack, recorded by ringcast's JGroups member",
    {"view_agreement", "leader_agreement", "integrity", "fifo", "convergence"},
    total_orders=(),
    converge_on="members",
    timeout=lambda settings: FD_TIMEOUT_NS,
)
"""What the lab holds JGroups' traces to (looked up by ``protocol = "jgroups"``)."""


def build() -> list[str]:
    """The ``java`` command line that runs the recorder (compiled at first use)."""
    return java.build(SOURCE, "JGroupsRecorder", JARS, "libjgroups-java", "JGroups")


MEMBER = Member(
    module=__name__,
    arguments=lambda node, setup: ["--address", setup.nodes[node]],
    multicast_route=True,
)
"""JGroups as a live run's member: its recorder, membership by IP multicast."""
