"""The one factory for the lab's SparkSession.

Local Spark (``local[*]``) is the embedded default; ``master`` (the ``--master``
option) or the ``SPARK_MASTER`` environment variable point the same code at a
cluster, and under ``spark-submit`` the submitted master is kept; ``remote`` (the
``--remote`` option) or ``SPARK_REMOTE`` make it a Spark Connect session instead.
Shuffle partitions are sized to the cores, the web UI is off unless asked for, and
Arrow is on. On anything but a local master the installed ringcast is shipped to
the executors (:mod:`ringcast.lab.ship`) before the first task, and :func:`where`
says where the session runs.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ringcast.lab.classcache import jvm_option
from ringcast.lab.errors import LabError
from ringcast.lab.ship import Shipped, ship

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA = 17
DEFAULT_MASTER = "local[*]"


def java_path() -> str | None:
    """The Java runtime Spark will use: ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is
    set, else ``java`` on the ``PATH`` (None when there is neither)."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java")


def java_version(java: str | None = None) -> int:
    """The major version of the Java runtime Spark will use (:func:`java_path`);
    ``LabError`` if none works."""
    if java is None:
        java = java_path()
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


def local_cores(master: str | None) -> int | None:
    """Cores of a ``local``/``local[N]``/``local[*]`` master; None for a cluster (or
    for no master at all)."""
    if master is None:
        return None
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


def resolve_remote(remote: str | None) -> str | None:
    """The Spark Connect URL: the argument, else ``SPARK_REMOTE``, else None."""
    return remote or os.environ.get("SPARK_REMOTE") or None


RUNTIME_SETTINGS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
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
"""The lab's settings that a running session (and so a Spark Connect client) may set."""


def spark_session(
    master: str | None = None,
    *,
    remote: str | None = None,
    app_name: str = "ringcast-lab",
    shuffle_partitions: int | None = None,
    ui: bool = False,
    conf: dict[str, str] | None = None,
    ship_package: bool | None = None,
    say: Callable[[str], None] | None = None,
    verbose: bool = False,
) -> SparkSession:
    """Build (or return the running) SparkSession for the lab.

    Unless ``verbose``, the JVM's own output (log4j's warnings at start, Java's, a
    failing master's stack traces) goes to a file of its own (:func:`quiet_gateway`)
    and Spark logs errors only; the lab's commands say in one line what went wrong.

    ``shuffle_partitions`` defaults to twice the cores (at least 2); ``conf`` adds
    any other Spark settings; the driver gets ``RINGCAST_DRIVER_MEMORY`` (default 4g),
    which in local mode is the executors' memory too. The JVMs run with
    :data:`JVM_OPTIONS`, the driver's with the class archive when there is one
    (:mod:`ringcast.lab.classcache`), Spark keeps 2000 generated classes instead of 100 and
    schedules jobs fairly between pools (the checks run some beside the certificate's;
    all three measured in ``docs/benchmarks.md``). Raises ``LabError`` when Java is missing or
    too old.

    ``remote`` (else ``SPARK_REMOTE``) connects to a Spark Connect server instead
    (:func:`connect_session`). ``ship_package`` (default: on any master that is not
    local) ships the installed ringcast to the executors before the first task;
    ``say`` receives the one line that says so.
    """
    url = resolve_remote(remote)
    if url:
        if master:
            raise LabError(f"--master {master} and --remote {url}: give one of them")
        return connect_session(
            url, app_name=app_name, conf=conf, ship_package=ship_package, say=say
        )
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise LabError("the lab needs PySpark: pip install 'ringcast[lab]'") from None
    chosen = resolve_master(master)
    # The executors' Python is the one PySpark reads from PYSPARK_PYTHON when the
    # session starts: spark.pyspark.python (as spark-submit takes it) sets it; a local
    # master runs this interpreter, a cluster Spark's default (python3 on the workers)
    python = (conf or {}).get("spark.pyspark.python")
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    elif chosen and local_cores(chosen) is not None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if chosen:
        builder = builder.master(chosen)
    cores = local_cores(chosen) if chosen else None
    if shuffle_partitions is None and cores is not None:
        shuffle_partitions = max(2, 2 * cores)
    settings = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": " ".join(
            o for o in ("-Dlog4j2.level=ERROR", JVM_OPTIONS, jvm_option()) if o
        ),
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
        "spark.driver.memory": os.environ.get("RINGCAST_DRIVER_MEMORY", "4g"),
        # one lab check plans a few hundred distinct stages: with Spark's default of
        # 100 cached generated classes they evict each other, and every re-run
        # compiles them again and makes the JIT compile the new classes again
        "spark.sql.codegen.cache.maxEntries": "2000",
        # the checks run some jobs beside the certificate's, in a pool of their own:
        # fair scheduling shares the task slots between the pools
        "spark.scheduler.mode": "FAIR",
        **RUNTIME_SETTINGS,
    }
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        if not verbose:
            quiet_gateway(settings, chosen, app_name)
        spark = _get_or_create(builder, chosen)
    except LabError:
        raise
    except Exception as e:  # the JVM failed to start: report it on one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LabError(
            f"cannot start Spark ({chosen or 'spark-submit'}): {first}"
            + ("" if verbose else " (--verbose shows the JVM's output)")
        ) from None
    spark.sparkContext.setLogLevel("WARN" if verbose else "ERROR")
    running = spark.sparkContext.master
    on_cluster = local_cores(running) is None
    if on_cluster:
        _await_executors(spark)
    if shuffle_partitions is None:  # a cluster: size to what it offers
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * parallelism)))
    if ship_package if ship_package is not None else on_cluster:
        _ship(spark, connect=False, say=say)
    return spark


MASTER_WAIT_S = 10.0
"""How long a standalone master may take to register the application: Spark's own
client retries three times twenty seconds at something that accepts connections but
does not answer as a master (another service's port, a master's web UI port)."""


def _get_or_create(builder: Any, master: str | None) -> SparkSession:
    """``builder.getOrCreate()``; for a standalone master (``spark://``), at most
    :data:`MASTER_WAIT_S` (``RINGCAST_MASTER_WAIT_S``) seconds, else ``LabError``
    naming the master. The call left waiting runs on in a daemon thread: the command
    then ends, and the driver's JVM with it."""
    if not master or not master.startswith("spark://"):
        return builder.getOrCreate()  # type: ignore[no-any-return]
    limit = float(os.environ.get("RINGCAST_MASTER_WAIT_S", MASTER_WAIT_S))
    box: dict[str, Any] = {}

    def start() -> None:
        try:
            box["spark"] = builder.getOrCreate()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    thread = threading.Thread(target=start, name="ringcast-spark-start", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        raise LabError(
            f"the Spark master {master} did not register this application within "
            f"{limit:g} s: is a Spark master listening there (spark://HOST:7077, not its "
            "web UI's port)? RINGCAST_MASTER_WAIT_S sets the wait"
        )
    if "error" in box:
        raise box["error"]
    return box["spark"]  # type: ignore[no-any-return]


def quiet_gateway(settings: dict[str, str], master: str | None, app_name: str) -> None:
    """Start the driver's JVM (PySpark's Py4J gateway) with its standard output and
    error in a file of their own instead of the terminal, unless one runs already (or
    ``spark-submit`` started it). PySpark's own launcher with ``popen_kwargs``; the
    JVM gets the same ``--conf`` settings as the session's builder gives it. The file,
    ``ringcast-lab-jvm-<pid>.log`` in the temporary directory, is removed at exit."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items())).setAppName(app_name)
    if master:
        conf = conf.setMaster(master)
    log = Path(tempfile.gettempdir()) / f"ringcast-lab-jvm-{os.getpid()}.log"
    with open(log, "ab") as out:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
    atexit.register(log.unlink, missing_ok=True)
    SparkContext._ensure_initialized(gateway=gateway)


def connect_session(
    url: str,
    *,
    app_name: str = "ringcast-lab",
    conf: dict[str, str] | None = None,
    ship_package: bool | None = None,
    say: Callable[[str], None] | None = None,
) -> SparkSession:
    """A Spark Connect session at ``url`` (``sc://HOST:PORT``) with the lab's runtime
    settings (:data:`RUNTIME_SETTINGS`; the server's own JVM settings are the
    server's business) and the installed ringcast uploaded as an artifact (unless
    ``ship_package`` is False)."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql.connect.utils import check_dependencies
    except ImportError:
        raise LabError("the lab needs PySpark: pip install 'ringcast[lab]'") from None
    try:
        check_dependencies()
    except ImportError as e:
        raise LabError(
            f"Spark Connect needs its Python client: pip install 'ringcast[lab]' ({e})"
        ) from None
    try:
        spark = SparkSession.builder.remote(url).appName(app_name).getOrCreate()
        refused = []
        for key, value in {**RUNTIME_SETTINGS, **(conf or {})}.items():
            try:
                spark.conf.set(key, value)
            except Exception:  # a setting the server keeps to itself
                refused.append(key)
        cores = _connect_cores(spark)
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * cores)))
    except LabError:
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LabError(f"cannot reach Spark Connect at {url}: {first}") from None
    _REMOTES[id(spark)] = url.split("/;")[0]  # no token or other parameters
    if say is not None:
        if refused:
            say(f"Spark Connect: the server keeps its own {', '.join(refused)}")
        say(
            "Spark Connect: no SparkContext on this side, so the checks run without a "
            "scheduler pool of their own for the certificate and without job "
            "descriptions, and the sweep's progress comes from the server's reports"
        )
    if ship_package is not False:
        _ship(spark, connect=True, say=say)
    return spark


_SHIPPED: dict[int, Shipped] = {}


def _ship(spark: Any, connect: bool, say: Callable[[str], None] | None) -> None:
    if id(spark) in _SHIPPED:  # getOrCreate handed back a session already given it
        return
    shipped = ship(spark, connect)
    _SHIPPED[id(spark)] = shipped
    if say is not None:
        say(shipped.line())


def shipped(spark: Any) -> Shipped | None:
    """What was shipped to ``spark``'s executors (None: nothing, they run the driver's
    Python or have ringcast installed)."""
    return _SHIPPED.get(id(spark))


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no SparkContext on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _executor_count(spark: Any) -> int:
    """Executors registered with the driver (the driver itself not counted)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1


EXECUTOR_WAIT_S = 60.0


def expected_executors(conf: Any) -> int | None:
    """How many executors the session's settings ask for: ``spark.executor.instances``
    (YARN, Kubernetes), else ``spark.cores.max`` over ``spark.executor.cores``
    (standalone); None when they do not say."""
    instances = conf.get("spark.executor.instances", None)
    if instances:
        return int(instances)
    cores_max = conf.get("spark.cores.max", None)
    per_executor = conf.get("spark.executor.cores", None)
    if cores_max and per_executor:
        return max(1, int(cores_max) // int(per_executor))
    return None


def _await_executors(spark: Any) -> None:
    """Wait (at most :data:`EXECUTOR_WAIT_S`) until the cluster has given the executors
    the settings ask for (:func:`expected_executors`), or, when they do not say, until
    no more have registered for two seconds, so that the first job is planned for
    what the cluster offers; ``LabError`` when none came."""
    limit = float(os.environ.get("RINGCAST_EXECUTOR_WAIT_S", EXECUTOR_WAIT_S))
    deadline = time.monotonic() + limit
    want = expected_executors(spark.sparkContext.getConf())
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = _executor_count(spark)
        if want is not None and n >= want:
            return
        if n != seen:
            seen, since = n, time.monotonic()
        elif want is None and n > 0 and time.monotonic() - since >= 2.0:
            return
        time.sleep(0.1)
    if seen <= 0:
        master = spark.sparkContext.master
        spark.stop()
        raise LabError(
            f"no executor registered with {master} in {limit:.0f} s: are its "
            "workers up, with the free cores and memory the session asks for "
            "(spark.executor.memory, spark.executor.cores)?"
        )


def _connect_cores(spark: Any) -> int:
    """Task slots behind a Spark Connect server: ``spark.default.parallelism`` when
    the server sets it, else the cores of its local master, else 2."""
    try:
        value = spark.conf.get("spark.default.parallelism", None)
        if value:
            return max(1, int(value))
        return local_cores(spark.conf.get("spark.master", "") or "") or 2
    except Exception:
        return 2


@dataclass(frozen=True)
class Where:
    """Where a session runs its tasks."""

    master: str
    executors: int | None  # None: not visible from here (Spark Connect)
    cores: int
    remote: str | None = None

    def line(self) -> str:
        if self.remote:
            return f"Spark Connect {self.remote} (server master {self.master}, {self.cores} cores)"
        if local_cores(self.master) is not None:
            return f"Spark master {self.master}: the driver's own executor, {self.cores} cores"
        n = self.executors
        plural = "s" if n != 1 else ""
        return f"Spark master {self.master}: {n} executor{plural}, {self.cores} cores"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "line": self.line()}


def where(spark: Any) -> Where:
    """The master, executors and cores of ``spark``."""
    if is_connect(spark):
        try:
            master = spark.conf.get("spark.master", "?") or "?"
        except Exception:
            master = "?"
        return Where(master, None, _connect_cores(spark), _REMOTES.get(id(spark), "sc://?"))
    sc = spark.sparkContext
    master = sc.master
    cores = local_cores(master)
    if cores is not None:
        return Where(master, 1, cores)
    return Where(master, _executor_count(spark), default_parallelism(spark))


_REMOTES: dict[int, str] = {}


class _NoContext:
    """What the checks get for a SparkContext under Spark Connect, which has none:
    scheduler pools and job descriptions are the server's, so setting them does
    nothing."""

    def setLocalProperty(self, key: str, value: str | None) -> None:
        pass

    def setJobDescription(self, value: str | None) -> None:
        pass


def job_context(spark: Any) -> Any:
    """``spark``'s SparkContext, or under Spark Connect a stand-in whose pool and job
    description settings do nothing (the checks then run without a pool of their
    own for the certificate)."""
    return _NoContext() if is_connect(spark) else spark.sparkContext


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once."""
    if is_connect(spark):
        return _connect_cores(spark)
    return max(1, spark.sparkContext.defaultParallelism)
