"""The one factory for the lab's SparkSession.

Local Spark (``local[*]``) is the embedded default; ``master`` (the ``--master``
option) or the ``SPARK_MASTER`` environment variable point the same code at a
cluster, and under ``spark-submit`` the submitted master is kept. Shuffle partitions
are sized to the cores, the web UI is off unless asked for, and Arrow is on.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ringcast.lab.errors import LabError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA = 17
DEFAULT_MASTER = "local[*]"


def java_version(java: str | None = None) -> int:
    """The major version of the Java runtime Spark will use; ``LabError`` if none works.

    The runtime is ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else ``java`` on
    the ``PATH``.
    """
    if java is None:
        home = os.environ.get("JAVA_HOME")
        java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise LabError(
            f"Java not found: Spark needs Java {MIN_JAVA} or newer "
            "(install a JDK and put java on the PATH or set JAVA_HOME)"
        )
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as e:
        raise LabError(f"cannot run {java}: {e.strerror}") from None
    return parse_java_version(out.stderr + out.stdout, java)


def parse_java_version(text: str, source: str = "java") -> int:
    """The major version in the output of ``java -version`` (``1.8.0_x`` is 8)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        raise LabError(f"{source}: cannot read the Java version from {text.strip()[:80]!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    return major


def check_java(java: str | None = None) -> int:
    """Raise ``LabError`` unless a Java runtime of at least :data:`MIN_JAVA` is installed."""
    major = java_version(java)
    if major < MIN_JAVA:
        raise LabError(
            f"Java {major} is too old: Spark needs Java {MIN_JAVA} or newer "
            "(install a newer JDK or point JAVA_HOME at one)"
        )
    return major


def local_cores(master: str) -> int | None:
    """Cores of a ``local``/``local[N]``/``local[*]`` master; None for a cluster."""
    if master == "local":
        return 1
    m = re.fullmatch(r"local\[(\*|\d+)(?:,\s*\d+)?\]", master)
    if not m:
        return None
    return os.cpu_count() or 1 if m.group(1) == "*" else int(m.group(1))


def resolve_master(master: str | None) -> str | None:
    """The master to set: the argument, else ``SPARK_MASTER``, else local (None under
    ``spark-submit``, which already configured one)."""
    if master:
        return master
    env = os.environ.get("SPARK_MASTER")
    if env:
        return env
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # launched by spark-submit
        return None
    return DEFAULT_MASTER


JVM_OPTIONS = "-XX:+UseParallelGC"
"""The throughput collector: the lab's jobs are batch work, and G1's concurrent
marking and write barriers cost the tasks about a fifth of their CPU time
(``docs/benchmarks.md``)."""


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "ringcast-lab",
    shuffle_partitions: int | None = None,
    ui: bool = False,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Build (or return the running) SparkSession for the lab.

    ``shuffle_partitions`` defaults to twice the cores (at least 2); ``conf`` adds
    any other Spark settings; the driver gets ``RINGCAST_DRIVER_MEMORY`` (default 4g),
    which in local mode is the executors' memory too. The JVMs run with
    :data:`JVM_OPTIONS`, Spark keeps 2000 generated classes instead of 100 and
    schedules jobs fairly between pools (the checks run some beside the certificate's;
    all three measured in ``docs/benchmarks.md``). Raises ``LabError`` when Java is missing or
    too old.
    """
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise LabError("the lab needs PySpark: pip install 'ringcast[lab]'") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    chosen = resolve_master(master)
    builder = SparkSession.builder.appName(app_name)
    if chosen:
        builder = builder.master(chosen)
    cores = local_cores(chosen) if chosen else None
    if shuffle_partitions is None and cores is not None:
        shuffle_partitions = max(2, 2 * cores)
    settings = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.level=ERROR {JVM_OPTIONS}",
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
        "spark.driver.memory": os.environ.get("RINGCAST_DRIVER_MEMORY", "4g"),
        # one lab check plans a few hundred distinct stages: with Spark's default of
        # 100 cached generated classes they evict each other, and every re-run
        # compiles them again and makes the JIT compile the new classes again
        "spark.sql.codegen.cache.maxEntries": "2000",
        # the checks run some jobs beside the certificate's, in a pool of their own:
        # fair scheduling shares the task slots between the pools
        "spark.scheduler.mode": "FAIR",
        # PySpark records the Python call site of every DataFrame and column function
        # in the JVM (four more Py4J calls each, and a walk of the Python stack) for
        # error messages; a check plans a few hundred frames and thousands of columns
        # on the driver, so without it planning takes about a quarter less time
        # (docs/benchmarks.md). Errors still name the failing expression.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # Spark 4.3 hashes every shuffled row into a checksum, to find map tasks whose
        # retry wrote other rows (nondeterministic stages) and then retry the stages
        # that read them; it does so while either setting is on. The checks' stages
        # are deterministic, and on the certificate's ten million rows the hashing is
        # a few percent of a check (docs/benchmarks.md)
        "spark.sql.shuffle.orderIndependentChecksum.enabled": "false",
        "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch": "false",
        # trace files hold much work in few bytes (zstd, dictionaries, delta-coded
        # times): with Spark's default cost of 4 MB for opening a file, a 3 MB trace of
        # ten million events was read by one task on one core. Without it, the input
        # splits are sized by their bytes alone, about one a core (docs/benchmarks.md)
        "spark.sql.files.openCostInBytes": "0",
    }
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # the JVM failed to start: report it on one line
        raise LabError(f"cannot start Spark ({chosen or 'spark-submit'}): {e}") from None
    spark.sparkContext.setLogLevel("ERROR")
    if shuffle_partitions is None:  # a cluster: size to what it offers
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * parallelism)))
    return spark


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once."""
    return max(1, spark.sparkContext.defaultParallelism)
