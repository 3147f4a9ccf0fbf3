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

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ringcast.protocols.registry import ProtocolSpec

NAME = "tomcat-tribes"
SOURCE = Path(__file__).with_name("TribesRecorder.java")
JARS = ("/usr/share/java/tomcat10-tribes.jar", "/usr/share/java/tomcat10-juli.jar")


class ReferenceUnavailable(RuntimeError):
    """Tomcat's Tribes jar or a JDK is missing and cannot be installed."""


def _not_simulated(ctx: Any) -> Any:
    raise ReferenceUnavailable(
        "tomcat-tribes is a reference system: it runs on real processes only "
        "(python -m ringcast.references.tribes)"
    )


SPEC = ProtocolSpec(
    name=NAME,
    factory=_not_simulated,
    doc="Apache Tomcat Tribes' NonBlockingCoordinator, recorded by ringcast's Tribes member",
    claims=frozenset({"leader_agreement", "view_agreement", "integrity"}),
    converge_on="members",
)
"""What the lab holds Tribes' traces to (looked up by ``protocol = "tomcat-tribes"``)."""


def ensure_installed() -> None:
    """Install Debian's libtomcat10-java when missing (as root), or explain."""
    if all(Path(j).exists() for j in JARS) and shutil.which("javac"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise ReferenceUnavailable(
            "Tomcat's Tribes jar and a JDK are needed: "
            "apt-get install libtomcat10-java openjdk-17-jdk-headless"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    packages = ["libtomcat10-java"] + ([] if shutil.which("javac") else ["openjdk-17-jdk-headless"])
    for cmd in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        done = subprocess.run(cmd, capture_output=True, env=env, timeout=900)
        if done.returncode != 0:
            raise ReferenceUnavailable(
                f"could not install Tribes: {' '.join(cmd)}: "
                + done.stderr.decode(errors="replace").strip()[-300:]
            )


def build(cache: Path | None = None) -> list[str]:
    """The ``java`` command line that runs the recorder, compiled at first use (and again
    when its source changes) into ``cache`` (default ``$XDG_CACHE_HOME/ringcast``)."""
    ensure_installed()
    tag = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    base = cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ringcast"
    classes = base / f"tribes-recorder-{tag}"
    classpath = ":".join([str(classes), *JARS])
    if not (classes / "TribesRecorder.class").exists():
        tmp = base / f".{classes.name}.{os.getpid()}"
        tmp.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["javac", "-d", str(tmp), "-cp", ":".join(JARS), str(SOURCE)],
            capture_output=True,
            timeout=300,
        )
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ReferenceUnavailable(
                "compiling the Tribes recorder failed: "
                + done.stderr.decode(errors="replace")[-500:]
            )
        shutil.rmtree(classes, ignore_errors=True)
        tmp.replace(classes)
    return [
        "java",
        "-Djava.net.preferIPv4Stack=true",  # the multicast group is IPv4
        "-Xms32m",
        "-Xmx128m",
        "-XX:+UseSerialGC",
        "-cp",
        classpath,
        "TribesRecorder",
    ]
