"""Java recorders (Tribes', JGroups'): Debian's jars installed at first use, the
recorder compiled with ``javac`` into a cache, and the ``java`` command that runs it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ringcast.references.install import ReferenceUnavailable, apt_install, cache_dir


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
