"""What the installed Tomcat's ``NonBlockingCoordinator`` still does of the account that
Tomcat 6.0.14's source gives (the class's source, as published with its documentation),
read from its bytecode with ``javap``:

    python -m ringcast.references.tribes.bytecode

Four points of that account that a run cannot isolate are read off the code itself:

* ``halt()``, ``release()`` and ``waitForRelease()`` are empty (the election never holds
  the channel's messages, whatever its description says);
* ``waitForCoordMsgTimeout`` is 15 s, fixed (a non-leader waits that long for a token
  or a view, then gives up);
* ``handleOtherToken`` drops a token that another member started when it reaches its
  leader (6.0.14: ``//startElection(false)``, commented out);
* ``AbsoluteOrder`` compares address bytes as *signed* Java bytes (6.0.14: 10.0.0.200
  before 10.0.0.1) or unsigned (``b & 0xFF``).

Each :class:`Point` says whether the 6.0.14 behaviour still holds, and the bytecode
that shows it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ringcast.references.install import ReferenceUnavailable

JAR = "/usr/share/java/tomcat10-tribes.jar"
COORDINATOR = "org.apache.catalina.tribes.group.interceptors.NonBlockingCoordinator"
ORDER = "org.apache.catalina.tribes.group.AbsoluteOrder$AbsoluteComparator"


@dataclass(frozen=True)
class Point:
    """One point of the 6.0.14 account, on the installed jar."""

    name: str
    account: str
    """What Tomcat 6.0.14's source does."""
    holds: bool
    """Whether the installed Tomcat still does it."""
    evidence: str


def javap(class_name: str, jar: str = JAR) -> str:
    """``javap -p -c -constants`` of ``class_name`` in ``jar``."""
    exe = shutil.which("javap")
    if exe is None:
        raise ReferenceUnavailable("javap (a JDK) is needed to read Tomcat's bytecode")
    if not Path(jar).exists():
        raise ReferenceUnavailable(f"{jar} is missing (Debian's libtomcat10-java)")
    done = subprocess.run(
        [exe, "-p", "-c", "-constants", "-cp", jar, class_name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise ReferenceUnavailable(f"javap {class_name}: {done.stderr.strip()[-300:]}")
    return done.stdout


def methods(text: str) -> dict[str, list[str]]:
    """A javap listing's methods: ``name(args)`` -> its instructions (``op args``)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        head = re.match(r"^  \S.*?([A-Za-z_$][\w$]*)\(([^)]*)\)[^;]*;$", line)
        if head:
            current = out.setdefault(f"{head.group(1)}({head.group(2)})", [])
            continue
        ins = re.match(r"^\s+(\d+): (\w+)\s*(.*)$", line)
        if ins and current is not None:
            current.append(f"{ins.group(1)}: {ins.group(2)} {ins.group(3)}".rstrip())
    return out


def _short(instruction: str) -> str:
    """An instruction with its constant-pool comment cut to the member's name."""
    return re.sub(r"\s+// \w+ (?:\S*[./])?([\w$<>]+):.*$", r" \1", instruction)


def _ops(body: list[str]) -> list[str]:
    return [i.split()[1] for i in body]


def points(jar: str = JAR) -> list[Point]:
    """The four points, read from ``jar``."""
    return read_points(javap(COORDINATOR, jar), javap(ORDER, jar))


def read_points(coord_text: str, order_text: str) -> list[Point]:
    """The four points, from the javap listings of the coordinator and the comparator."""
    coord = methods(coord_text)
    order = methods(order_text)
    out = []
    empty = [m for m in ("halt()", "release()", "waitForRelease()") if _ops(coord[m]) == ["return"]]
    out.append(
        Point(
            "halt and release do nothing",
            "halt(), release() and waitForRelease() are empty",
            len(empty) == 3,
            f"empty: {', '.join(empty) or 'none'}",
        )
    )
    timeout = re.search(r"waitForCoordMsgTimeout = (\d+)l;", coord_text)
    out.append(
        Point(
            "15 s waits",
            "a non-leader waits waitForCoordMsgTimeout = 15000 ms for a token or a view",
            timeout is not None and timeout.group(1) == "15000",
            f"waitForCoordMsgTimeout = {timeout.group(1) if timeout else '?'} ms",
        )
    )
    other = next(v for k, v in coord.items() if k.startswith("handleOtherToken("))
    # if (local.equals(msg.getLeader())) { /* startElection(false) */ } else forward:
    # the leader's branch jumps straight to the method's return
    ops = _ops(other)
    dropped = False
    for k in range(len(other) - 3):
        if "getLeader" in other[k] and "equals" in other[k + 1] and ops[k + 2] == "ifeq":
            dropped = (
                ops[k + 3] == "goto"
                and other[k + 3].split()[-1] == other[-1].split(":")[0]
                and ops[-1] == "return"
            )
            break
    out.append(
        Point(
            "a foreign token dies at the leader",
            "handleOtherToken does nothing when this member is the token's leader",
            dropped,
            "; ".join(_short(i) for i in other[:7]),
        )
    )
    compare = order["compareBytes(byte, byte)"]
    masked = sum(1 for i in compare if i.endswith("sipush 255")) == 2 and "iand" in _ops(compare)
    out.append(
        Point(
            "signed bytes in AbsoluteOrder",
            "address bytes compared as signed Java bytes (10.0.0.200 before 10.0.0.1)",
            not masked,
            "; ".join(_short(i) for i in compare),
        )
    )
    return out


def main() -> int:
    try:
        found = points()
    except ReferenceUnavailable as e:
        print(f"ringcast: {e}", file=sys.stderr)
        return 2
    for p in found:
        print(f"{'still so' if p.holds else 'fixed   '}  {p.name}: {p.account}")
        print(f"          {p.evidence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
