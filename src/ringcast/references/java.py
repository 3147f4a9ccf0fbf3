"""Java recorders (Tribes', JGroups'): Debian's jars installed at first use, the
recorder compiled with ``javac`` into a cache, and the ``java`` command that runs it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path


class ReferenceUnavailable(RuntimeError):
    """A reference's packages, a JDK or a C compiler are missing and cannot be installed."""


def cache_dir() -> Path:
    """Where recorders are built: ``$XDG_CACHE_HOME/ringcast`` or ``~/.cache/ringcast``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ringcast"


def apt_install(packages: Sequence[str], what: str) -> None:
    """``apt-get install`` ``packages`` as root, or say which to install."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise ReferenceUnavailable(f"{what} needs: apt-get install {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        done = subprocess.run(cmd, capture_output=True, env=env, timeout=900)
        if done.returncode != 0:
            raise ReferenceUnavailable(
                f"could not install {what}: {' '.join(cmd)}: "
                + done.stderr.decode(errors="replace").strip()[-300:]
            )


def build(source: Path, main: str, jars: Sequence[str], package: str, what: str) -> list[str]:
    """The ``java`` command line that runs class ``main`` of ``source``, compiled at first
    use (and again when the source changes) against ``jars`` (from Debian's ``package``,
    installed when missing, with a JDK)."""
    if not all(Path(j).exists() for j in jars) or not shutil.which("javac"):
        apt_install(
            [package, *([] if shutil.which("javac") else ["openjdk-17-jdk-headless"])], what
        )
    tag = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    classes = cache_dir() / f"{main}-{tag}"
    if not (classes / f"{main}.class").exists():
        tmp = cache_dir() / f".{classes.name}.{os.getpid()}"
        tmp.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["javac", "-d", str(tmp), "-cp", ":".join(jars), str(source)],
            capture_output=True,
            timeout=300,
        )
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ReferenceUnavailable(
                f"compiling {source.name} failed: " + done.stderr.decode(errors="replace")[-500:]
            )
        shutil.rmtree(classes, ignore_errors=True)
        tmp.replace(classes)
    return [
        "java",
        "-Djava.net.preferIPv4Stack=true",  # multicast groups and addresses are IPv4
        "-Xms32m",
        "-Xmx128m",
        "-XX:+UseSerialGC",
        "-cp",
        ":".join([str(classes), *jars]),
        main,
    ]
