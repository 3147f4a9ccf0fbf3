"""What a live run needs from the machine, checked before anything is built.

A live run needs root (network namespaces, nftables), iproute2 (``ip``) and nftables
(``nft``); a missing tool is installed from the Debian package on first use, the way
``./dev`` installs what the project needs, when the machine has ``apt-get``. tc's
``netem`` queueing discipline (delay, duplication, reordering) is optional: whether this
kernel has it is probed in a throwaway namespace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

PACKAGES = {"ip": "iproute2", "nft": "nftables", "tc": "iproute2"}
"""The Debian package of each tool a live run uses."""


class LiveError(RuntimeError):
    """A live run cannot start or go on; the message is one line naming the cause."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise LiveError("live runs need root (network namespaces and nftables rules); run as root")


def ensure_tools(tools: tuple[str, ...] = ("ip", "nft", "tc")) -> None:
    """Each of ``tools`` on PATH, installing its Debian package with apt-get if
    missing; :class:`LiveError` naming the first that cannot be had."""
    missing = [t for t in tools if shutil.which(t) is None]
    if not missing:
        return
    apt = shutil.which("apt-get")
    packages = sorted({PACKAGES[t] for t in missing})
    if apt is not None:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            subprocess.run([apt, "update", "-qq"], check=True, capture_output=True, env=env)
            subprocess.run(
                [apt, "install", "-y", "-qq", "--no-install-recommends", *packages],
                check=True,
                capture_output=True,
                env=env,
            )
        except subprocess.CalledProcessError as e:
            last = (e.stderr or b"").decode().strip().splitlines()[-1:] or ["failed"]
            raise LiveError(
                f"cannot install {', '.join(packages)} with apt-get: {last[0]}"
            ) from None
    still = [t for t in missing if shutil.which(t) is None]
    if still:
        raise LiveError(
            f"live runs need {', '.join(still)} (Debian package "
            f"{', '.join(sorted({PACKAGES[t] for t in still}))}); not found on PATH"
        )


def has_netem() -> bool:
    """Whether this kernel has tc's netem queueing discipline (tried on a veth pair in
    a namespace made for the purpose and deleted at once)."""
    ip = shutil.which("ip")
    tc = shutil.which("tc")
    if ip is None or tc is None:
        return False
    ns = f"rcprobe-{uuid.uuid4().hex[:6]}"
    try:
        subprocess.run([ip, "netns", "add", ns], check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    try:
        subprocess.run(
            [ip, "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
            check=True,
            capture_output=True,
            timeout=10,
        )
        r = subprocess.run(
            [tc, "-n", ns, "qdisc", "add", "dev", "v0", "root", "netem", "delay", "1ms"],
            capture_output=True,
            timeout=10,
        )
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        subprocess.run([ip, "netns", "del", ns], capture_output=True, timeout=10)
