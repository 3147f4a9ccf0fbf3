"""Apache Tomcat Tribes as a reference system: members of a Tribes group running
Tomcat's ``NonBlockingCoordinator`` election, recorded in ringcast's trace schema, so
that the lab checks Tribes' histories with the checks it holds ringcast's ``tribes``
family to.

ringcast's ``tribes`` implements the election the ``NonBlockingCoordinator`` class of
Tomcat Tribes describes; this runs the class itself (Debian's ``libtomcat10-java``,
Tomcat 10.1's ``tomcat10-tribes.jar``). What the lab holds its traces to (:data:`SPEC`):
one agreed coordinator per view, view agreement and integrity. Not FIFO order: a Tribes
channel keeps one sender's messages in order only with the ``OrderInterceptor``, which
the coordinator's stack here (Tomcat's test of it) does not have; its receiver hands
messages to a pool of threads, and the suite's run saw a member deliver a sender's
message before the one sent just before it (docs/references.md).

The recorder is a small Java program written for ringcast (``TribesRecorder.java``
beside this file; nothing of Tomcat's code): a ``GroupChannel`` with multicast
membership (``McastService``), the coordinator interceptor and below it the
``TcpFailureDetector`` (as Tomcat's test of the coordinator stacks them), compiled with
``javac`` at first use into a cache (:func:`build`). It sends the workload to every other
member and prints its views (the coordinator's view id, members and coordinator), sends
and deliveries; ringcast.references.recording turns them into trace rows, a ``leader``
row beside each view.
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

NAME = "tomcat-tribes"
SOURCE = Path(__file__).with_name("TribesRecorder.java")
JARS = ("/usr/share/java/tomcat10-tribes.jar", "/usr/share/java/tomcat10-juli.jar")


MEMBER_DROP_TIME_NS = 3_000_000_000
"""``McastService``'s default member drop time: the failure-detection timeout
convergence is bounded in (the TcpFailureDetector sees a killed member's connections
close sooner)."""


SPEC = reference_spec(
    NAME,
    "Apache Tomcat Tribes' NonBlockingCoordinator, recorded by ringcast's Tribes member",
    {"leader_agreement", "view_agreement", "integrity", "convergence"},
    converge_on="members",
    timeout=lambda settings: MEMBER_DROP_TIME_NS,
)
"""What the lab holds Tribes' traces to (looked up by ``protocol = "tomcat-tribes"``)."""


def build() -> list[str]:
    """The ``java`` command line that runs the recorder (compiled at first use)."""
    return java.build(SOURCE, "TribesRecorder", JARS, "libtomcat10-java", "Tomcat Tribes")


MEMBER = Member(
    module=__name__,
    arguments=lambda node, setup: ["--address", setup.nodes[node], "--port", "4000"],
    multicast_route=True,
)
"""Tribes as a live run's member: its recorder, membership by IP multicast."""
