"""Where the lab's Spark runs, checked before Spark starts: the syntax of a master or
Spark Connect URL, and whether anything listens at a remote one.

A Spark driver pointed at a standalone master that is not there retries for about a
minute (three registration attempts, twenty seconds each) and prints a Java stack
trace; a Spark Connect client retries with back-off. So the lab first opens a TCP
connection to each address the URL names (:data:`PROBE_TIMEOUT_S` at most) and stops
with one line naming the URL when none answers.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit

from ringcast.lab.errors import LabError

PROBE_TIMEOUT_S = 5.0
CONNECT_DEFAULT_PORT = 15002

_LOCAL = re.compile(r"local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://URL"


def master_addresses(master: str, where: str = "--master") -> list[tuple[str, int]]:
    """The addresses a master URL names (none for local, YARN and Kubernetes, whose
    reachability is their client's business); ``LabError`` for what is not a master URL."""
    if _LOCAL.fullmatch(master) or _LOCAL_CLUSTER.fullmatch(master) or master == "yarn":
        return []
    if master.startswith("k8s://") and len(master) > len("k8s://"):
        return []
    if master.startswith("spark://"):
        out = []
        for part in master[len("spark://") :].split(","):
            m = _HOST_PORT.fullmatch(part)
            if not m or not 0 < int(m["port"]) < 65536:
                raise LabError(f"{where} {master}: {part!r} is not HOST:PORT")
            out.append((m["host"].strip("[]"), int(m["port"])))
        return out
    raise LabError(f"{where} {master}: not a Spark master URL (expected {MASTER_FORMS})")


def remote_address(url: str, where: str = "--remote") -> tuple[str, int]:
    """The address of a Spark Connect URL ``sc://HOST[:PORT][/;param=value...]``."""
    if not url.startswith("sc://"):
        raise LabError(f"{where} {url}: not a Spark Connect URL (expected sc://HOST:PORT)")
    parts = urlsplit("http://" + url[len("sc://") :].split("/;", 1)[0].split(";", 1)[0])
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise LabError(f"{where} {url}: bad port (expected sc://HOST:PORT)") from None
    if not host:
        raise LabError(f"{where} {url}: no host (expected sc://HOST:PORT)")
    return host, port or CONNECT_DEFAULT_PORT


def probe(addresses: list[tuple[str, int]], url: str, what: str, timeout: float) -> None:
    """``LabError`` naming ``url`` unless one of ``addresses`` accepts a TCP connection."""
    reasons = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except TimeoutError:
            reasons.append(f"{host}:{port} did not answer within {timeout:g} s")
        except OSError as e:
            reasons.append(f"{host}:{port}: {e.strerror or e}")
    raise LabError(f"cannot reach {what} {url}: {'; '.join(reasons)} (is it running?)")


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # length 0, type 4, flags 0, stream 0
SETTINGS_FRAME = 0x04


def probe_grpc(address: tuple[str, int], url: str, timeout: float) -> None:
    """``LabError`` unless the server at ``address`` answers as gRPC does (HTTP/2, RFC
    9113 section 3.4): to the client's connection preface it sends its own, a SETTINGS
    frame. A Spark Connect client would otherwise retry, with back-off, for minutes at a
    port that accepts connections and says nothing."""
    host, port = address
    where = f"cannot reach the Spark Connect server {url}: {host}:{port}"
    try:
        with socket.create_connection(address, timeout=timeout) as s:
            s.sendall(HTTP2_PREFACE + EMPTY_SETTINGS)
            head = b""
            while len(head) < 9:
                chunk = s.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError:
        raise LabError(
            f"{where} accepts connections but gave no answer within {timeout:g} s "
            "(is it a Spark Connect server?)"
        ) from None
    except OSError as e:
        raise LabError(f"{where}: {e.strerror or e}") from None
    if len(head) < 9 or head[3] != SETTINGS_FRAME:
        raise LabError(f"{where} does not answer as a Spark Connect (gRPC) server")


def check_one_of(master: str | None, remote: str | None) -> None:
    """A master and a Spark Connect URL both given: the first thing said of the options."""
    if master and remote:
        raise LabError(f"--master {master} and --remote {remote}: give one of them")


def check_where(
    master: str | None, remote: str | None, *, timeout: float = PROBE_TIMEOUT_S
) -> None:
    """Check the master or Spark Connect URL the session will use (the argument or its
    environment variable) before Spark starts: its syntax, then that it listens."""
    check_one_of(master, remote)
    if remote:
        address = remote_address(remote)
        probe([address], remote, "the Spark Connect server", timeout)
        if "use_ssl=true" not in remote.lower():  # under TLS, HTTP/2 comes after a handshake
            probe_grpc(address, remote, timeout)
    elif master:
        addresses = master_addresses(master)
        if addresses:
            probe(addresses, master, "the Spark master", timeout)
