"""The driver JVM's class-data archive: named for one Java runtime and one Spark
installation, built once and renamed into place, mapped by every later lab JVM, and
off when asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ringcast.lab.localcluster
from ringcast.lab import classcache


def test_the_archive_is_one_a_java_runtime_and_spark_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = classcache.archive_path()
    assert first is not None and first.parent == tmp_path / "ringcast"
    assert first.name.startswith("spark-") and first.suffix == ".jsa"
    assert classcache.archive_path() == first
    other = tmp_path / "other-spark"
    (other / "jars").mkdir(parents=True)
    monkeypatch.setattr(ringcast.lab.localcluster, "spark_home", lambda: other)
    assert classcache.archive_path() not in (None, first)
    monkeypatch.setenv("RINGCAST_CLASS_ARCHIVE", "off")
    assert classcache.archive_path() is None
    assert classcache.jvm_option() == ""


def test_the_option_names_the_archive_only_once_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = classcache.archive_path()
    assert path is not None
    assert classcache.jvm_option() == ""
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert classcache.jvm_option() == f"-XX:SharedArchiveFile={path} {classcache.QUIET}"


def test_unfinished_builds_and_archives_of_removed_installations_are_removed(
    tmp_path: Path,
) -> None:
    gone = tmp_path / "spark-0000.jsa.999999999.tmp"  # no such process
    mine = tmp_path / f"spark-1111.jsa.{os.getpid()}.tmp"  # a build under way
    kept = tmp_path / "spark-2222.jsa"
    removed = tmp_path / "spark-3333.jsa"
    for f in (gone, mine, kept, removed):
        f.write_bytes(b"x")
    kept.with_suffix(".json").write_text(json.dumps({"spark": str(tmp_path)}))
    removed.with_suffix(".json").write_text(json.dumps({"spark": str(tmp_path / "no")}))
    classcache._remove_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [mine.name, kept.name, kept.with_suffix(".json").name]
    )


def test_a_lab_jvm_maps_the_archive() -> None:
    """Built (or found: ``./dev`` builds it before the tests) in this user's cache, the
    archive is mapped into a new lab session's JVM (its path in ``/proc/PID/maps``), and
    a second build is nothing to do."""
    build = [sys.executable, "-m", "ringcast.lab.classcache"]
    subprocess.run(build, check=True, timeout=600, capture_output=True)
    path = classcache.archive_path()
    assert path is not None and path.is_file() and path.stat().st_size > 0
    again = subprocess.run(build, check=True, timeout=60, capture_output=True, text=True)
    assert again.stderr == ""
    code = (
        "import sys\n"
        "from ringcast.lab.session import spark_session\n"
        "s = spark_session('local[1]')\n"
        "pid = s._jvm.java.lang.ProcessHandle.current().pid()\n"
        "maps = open(f'/proc/{pid}/maps').read()\n"
        "print(s.range(3).count(), maps.count(sys.argv[1]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        check=True,
        timeout=300,
        capture_output=True,
        text=True,
    )
    count, mapped = out.stdout.split()[-2:]
    assert count == "3"
    assert int(mapped) > 0, "the archive is not mapped"
