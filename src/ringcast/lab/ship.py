"""Shipping ringcast to executors that do not have it installed.

A sweep's tasks import ringcast (the simulator, the protocols) in the executors'
Python. On ``local[*]`` that is the driver's own interpreter; on a cluster it is
whatever Python the workers run, which need not have ringcast. Before the first
task the driver packs the installed package into one zip (the ``ringcast`` package
and its ``.dist-info`` with the entry points, so that the protocols are found on
the executors as on the driver) and adds it to the session: ``addPyFile`` on a
classic session, an artifact (``addArtifacts(..., pyfile=True)``) through Spark
Connect. Spark copies it to every executor, present and future, and puts it on the
tasks' ``sys.path``. The executors still need ringcast's dependencies (pyarrow and
numpy, which PySpark's Arrow support needs anyway, and pandas).

The zip is built once per content (its name carries a hash of what it holds, with
fixed timestamps), so two sessions of the same code ship the same file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "ringcast"
_EPOCH = (1980, 1, 1, 0, 0, 0)
_METADATA_FILES = ("METADATA", "entry_points.txt")


@dataclass(frozen=True)
class Shipped:
    """What :func:`ship` added to a session."""

    path: Path
    bytes: int
    files: int
    seconds: float
    how: str  # "addPyFile" or "artifact"

    def line(self) -> str:
        return (
            f"shipped {self.path.name} ({self.files} files, {self.bytes / 1024:.0f} KiB) "
            f"to the executors by {self.how} in {self.seconds:.2f} s"
        )


def _package_files() -> list[tuple[str, bytes]]:
    """(archive name, content) of the installed package and its distribution metadata."""
    import ringcast

    root = Path(ringcast.__file__).resolve().parent
    files: list[tuple[str, bytes]] = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files.append((f"{PACKAGE}/{path.relative_to(root).as_posix()}", path.read_bytes()))
    # Python's zip importer finds no namespace package (a folder without __init__.py,
    # such as ringcast/lab): in the zip, each such folder gets an empty one
    names = {name for name, _ in files}
    folders = {name.rsplit("/", 1)[0] for name in names if name.endswith(".py")}
    files += [(f"{d}/__init__.py", b"") for d in sorted(folders) if f"{d}/__init__.py" not in names]
    dist = importlib.metadata.distribution(PACKAGE)
    info = f"{PACKAGE}-{dist.version}.dist-info"
    for name in _METADATA_FILES:
        text = dist.read_text(name)
        if text is not None:
            files.append((f"{info}/{name}", text.encode()))
    return files


def build_zip(directory: Path | None = None) -> tuple[Path, int]:
    """The zip of the installed ringcast (built unless one with the same content is
    there); returns its path and the number of files in it."""
    files = _package_files()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()[:12]
    version = importlib.metadata.version(PACKAGE)
    directory = directory or Path(tempfile.gettempdir()) / "ringcast-ship"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{PACKAGE}-{version}-{digest}.zip"
    if not path.exists():
        tmp = path.with_suffix(f".{time.monotonic_ns()}.part")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path, len(files)


def ship(spark: Any, connect: bool) -> Shipped:
    """Add the zip of the installed ringcast to ``spark`` (a classic session or a
    Spark Connect one) before its first task."""
    t0 = time.perf_counter()
    path, files = build_zip()
    if connect:
        spark.addArtifacts(str(path), pyfile=True)
        how = "artifact"
    else:
        spark.sparkContext.addPyFile(str(path))
        how = "addPyFile"
    return Shipped(path, path.stat().st_size, files, time.perf_counter() - t0, how)
