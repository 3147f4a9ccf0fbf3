"""The Spark driver JVM's class-data archive (HotSpot's application class-data sharing).

A lab session's JVM reads, verifies and links some twenty thousand of Spark's classes
before its first job, and every ``ringcast lab`` command starts one. A dynamic archive of
the classes one session loaded (``-XX:ArchiveClassesAtExit``, Java 13 and later) lets
each later JVM map them instead (``-XX:SharedArchiveFile``): on the test machine the
session's start and its first job take about half as long (``docs/benchmarks.md``).

:func:`build` makes the archive once: a session runs a few small queries in a JVM
started with ``-XX:ArchiveClassesAtExit`` into a temporary file, the JVM exits (it writes
the file then), and the file is renamed into place, so that no JVM ever sees half an
archive. ``./dev`` builds it before the lab runs (``python -m ringcast.lab.classcache``
does the same for an installed ringcast). :func:`jvm_option` names it for every later
driver JVM (:func:`ringcast.lab.session.spark_session`); without an archive the JVM
starts as before.

An archive holds the classes of one Java runtime and one Spark installation, found by
their paths: its name carries a digest of both (:func:`archive_path`), in
``$XDG_CACHE_HOME/ringcast`` (else ``~/.cache/ringcast``). A JVM that finds it unusable
all the same (a runtime updated in place) starts without it, HotSpot's default
(``-Xshare:auto``); the JVM's class-sharing log is off either way.
``RINGCAST_CLASS_ARCHIVE=off`` turns the archive off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""HotSpot's class-sharing log off: it lists every class it leaves out of an archive."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ringcast"


def _java() -> Path | None:
    from ringcast.lab.session import java_path

    java = java_path()
    return Path(java).resolve() if java and Path(java).exists() else None


def archive_path() -> Path | None:
    """Where the archive of this Java runtime and this Spark installation is (whether
    or not it exists); None when it is turned off or there is no Java."""
    if os.environ.get("RINGCAST_CLASS_ARCHIVE", "").lower() in ("off", "0", "no"):
        return None
    java = _java()
    if java is None:
        return None
    from ringcast.lab.localcluster import spark_home

    spark = spark_home()
    stat = java.stat()
    key = f"{java}\0{stat.st_size}\0{stat.st_mtime_ns}\0{spark}\0{_spark_version(spark)}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"spark-{digest}.jsa"


def _spark_version(spark: Path) -> str:
    jars = sorted(p.name for p in (spark / "jars").glob("spark-core_*.jar"))
    return jars[0] if jars else ""


def jvm_option() -> str:
    """The driver JVM's options that map the archive, or "" when there is none."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def build() -> Path | None:
    """Make the archive unless it exists (see the module's docstring); returns its path,
    or None when it is turned off, there is no Java, or the JVM wrote none. Must run in
    a process without a SparkSession of its own yet."""
    from pyspark import SparkContext

    from ringcast.lab.localcluster import spark_home
    from ringcast.lab.session import JVM_OPTIONS, spark_session

    final = archive_path()
    if final is None or final.is_file():
        return final
    if SparkContext._gateway is not None:  # this process's JVM runs already, unarchived
        return None
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(final.parent)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    options = f"-Dlog4j2.level=ERROR {JVM_OPTIONS} -XX:ArchiveClassesAtExit={tmp} {QUIET}"
    spark = spark_session(
        "local[1]",
        app_name="ringcast-class-archive",
        conf={"spark.driver.extraJavaOptions": options},
    )
    _exercise(spark)
    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None:  # not a JVM of this process's own: nothing to wait for
        return None
    proc.stdin.close()  # the gateway exits at the end of its standard input
    proc.wait(timeout=300)
    if proc.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        return None
    final.with_suffix(".json").write_text(
        json.dumps({"java": str(_java()), "spark": str(spark_home())}) + "\n"
    )
    os.replace(tmp, final)
    return final


def _exercise(spark: SparkSession) -> None:
    """A few small queries of the kinds the lab runs (a window, an aggregation, a
    join, a sort, Arrow to pandas), so that the classes they load are archived."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.range(2000).select(
        (F.col("id") % 7).alias("run"),
        F.col("id").alias("i"),
        F.col("id").cast("string").alias("m"),
    )
    w = Window.partitionBy("run").orderBy("i")
    per = (
        df.withColumn("prev", F.lag("i").over(w))
        .groupBy("run")
        .agg(F.count("*").alias("n"), F.max("prev").alias("last"), F.collect_list("m").alias("ms"))
    )
    per.join(df.groupBy("run").agg(F.min("i").alias("first")), "run").orderBy("run").collect()
    per.select("run", "n").toPandas()


def _remove_stale(directory: Path) -> None:
    """Temporary archives of builds that did not finish (their process is gone), and
    archives of Spark installations that no longer exist."""
    from ringcast.runtime.cluster import pid_alive

    for tmp in directory.glob("spark-*.jsa.*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or not pid_alive(int(pid)):
            tmp.unlink(missing_ok=True)
    for meta in directory.glob("spark-*.json"):
        try:
            spark = Path(json.loads(meta.read_text())["spark"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not spark.exists():
            meta.with_suffix(".jsa").unlink(missing_ok=True)
            meta.unlink(missing_ok=True)


def main() -> int:
    from ringcast.lab.errors import LabError

    had = archive_path()
    if had is None or had.is_file():
        return 0
    try:
        path = build()
    except LabError as e:
        print(f"ringcast: no class archive for Spark's JVM: {e}", file=sys.stderr)
        return 0  # the lab runs without one
    if path is not None:
        print(f"ringcast: made the class archive of Spark's JVM: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
