"""What every reference system needs around it: its Debian packages installed at first
use, a cache to build its recorder into, and a spec that says what it claims and that
it cannot be simulated."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ringcast.protocols.registry import ProtocolSpec


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


def reference_spec(name: str, doc: str, claims: Iterable[str], **fields: Any) -> ProtocolSpec:
    """The spec of reference system ``name``: what the lab holds its traces to; its
    factory refuses, since the system runs on real processes only."""

    def not_simulated(ctx: Any) -> Any:
        raise ReferenceUnavailable(
            f"{name} is a reference system: it runs on real processes only (docs/references.md)"
        )

    return ProtocolSpec(
        name=name, factory=not_simulated, doc=doc, claims=frozenset(claims), **fields
    )
