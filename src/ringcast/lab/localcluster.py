"""A throwaway Spark standalone cluster (and Spark Connect server) on loopback, from
the installed PySpark: what the tests and ``bench/lab_cluster.py`` point the lab at.

PySpark's wheel carries Spark's launchers: ``bin/spark-class`` starts a standalone
master (``org.apache.spark.deploy.master.Master``) and workers
(``org.apache.spark.deploy.worker.Worker``), ``sbin/start-connect-server.sh`` a
Spark Connect server. Every process here is started in the foreground of a child
process of its own, bound to 127.0.0.1, logs in the cluster's directory, and is
stopped (its whole process group) by :meth:`LocalCluster.stop`.

The workers' Python (``python``) is the executors' Python; :func:`bare_python`
makes one without ringcast: the base interpreter with no site-packages but a
directory of links to what PySpark's Arrow tasks and ringcast's simulations import
(pyarrow, numpy, pandas and pandas' own dependencies), so that a sweep only works
when the driver ships ringcast.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXECUTOR_PACKAGES = ("pyarrow", "numpy", "numpy.libs", "pandas", "dateutil", "pytz", "tzdata")
"""What the executors' Python needs besides ringcast (which the driver ships) and
PySpark (which Spark puts on the workers' ``PYTHONPATH`` from its own ``python/lib``):
pyarrow for ``mapInArrow`` and the traces, numpy for the simulator, pandas (and its
dependencies) for PySpark's Arrow support."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def bare_python(directory: Path, log: Path | None = None) -> Path:
    """An executable that runs this Python's base interpreter without any
    site-packages (``-S``) and with only :data:`EXECUTOR_PACKAGES` importable: no
    ringcast; ``log``: a file each start appends a line to. Returns the path of the
    wrapper script."""
    import pyarrow

    site = Path(pyarrow.__file__).resolve().parents[1]
    lib = directory / "site"
    lib.mkdir(parents=True, exist_ok=True)
    for name in EXECUTOR_PACKAGES:
        if (site / name).exists() and not (lib / name).exists():
            (lib / name).symlink_to(site / name)
    for extra in ("six.py",):
        if (site / extra).exists() and not (lib / extra).exists():
            (lib / extra).symlink_to(site / extra)
    base = getattr(sys, "_base_executable", sys.executable)
    wrapper = directory / "python"
    record = f'echo "$$ $*" >> "{log}"\n' if log is not None else ""
    wrapper.write_text(
        "#!/bin/sh\n"
        "# the executors' Python: no site-packages, no ringcast\n"
        f"{record}"
        f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{lib}" exec "{base}" -S "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def _environment(python: Path | str, log_dir: Path, memory: str = "256m") -> dict[str, str]:
    """The launchers' environment: no Python path or Spark settings of the caller's,
    the executors' Python, logs and pid files in ``log_dir``, the JVMs' heap
    ``memory`` (a master or worker needs little), in the foreground, on loopback."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_REMOTE", "SPARK_MASTER")
        and not k.startswith("PYSPARK_")
        and not k.startswith("SPARK_CONNECT")
    }
    env.update(
        SPARK_HOME=str(spark_home()),
        PYSPARK_PYTHON=str(python),
        SPARK_LOG_DIR=str(log_dir),
        SPARK_PID_DIR=str(log_dir),
        SPARK_DAEMON_MEMORY=memory,
        SPARK_NO_DAEMONIZE="1",
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return env


def _wait(
    what: str, ready: object, proc: subprocess.Popen[bytes], log: Path, timeout: float
) -> None:
    """Poll ``ready()`` until true; raise with the log's tail if ``proc`` died or
    ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise RuntimeError(f"{what} did not come up (exit {proc.poll()}):\n{tail}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class LocalCluster:
    """A standalone master and its workers on loopback."""

    directory: Path
    python: Path | str = field(default_factory=lambda: sys.executable)
    worker_memory: str = "1g"
    port: int = 0
    ui_port: int = 0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.directory,
                start_new_session=True,
            )
        self.processes[name] = proc
        return proc

    def start(self, workers: int = 2, timeout: float = 120.0) -> LocalCluster:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port, self.ui_port = free_port(), free_port()
        env = _environment(self.python, self.directory)
        spark_class = str(spark_home() / "bin" / "spark-class")
        master = self._spawn(
            "master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "--webui-port", str(self.ui_port),
            ],
            env,
        )  # fmt: skip
        _wait("the Spark master", lambda: self.state() is not None, master,
              self.directory / "master.log", timeout)  # fmt: skip
        for k in range(workers):
            self.start_worker(f"worker{k + 1}")
        self.await_workers(workers, timeout)
        return self

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        """One more worker of one core and :attr:`worker_memory`."""
        env = _environment(self.python, self.directory)
        work = self.directory / name
        work.mkdir(exist_ok=True)
        return self._spawn(
            name,
            [
                str(spark_home() / "bin" / "spark-class"),
                "org.apache.spark.deploy.worker.Worker",
                self.master,
                "--host", "127.0.0.1",
                "--cores", "1",
                "--memory", self.worker_memory,
                "--webui-port", str(free_port()),
                "--work-dir", str(work),
            ],
            env,
        )  # fmt: skip

    def state(self) -> dict[str, Any] | None:
        """The master's JSON status (None while it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                return json.loads(r.read())  # type: ignore[no-any-return]
        except OSError:
            return None

    def alive_workers(self) -> int:
        s = self.state() or {}
        return sum(1 for w in s.get("workers", []) if w.get("state") == "ALIVE")

    def await_workers(self, n: int, timeout: float = 120.0) -> None:
        _wait(f"{n} Spark workers", lambda: self.alive_workers() >= n,
              self.processes["master"], self.directory / "master.log", timeout)  # fmt: skip

    def kill(self, name: str) -> None:
        """``kill -9`` one process (a worker's JVM) without stopping anything else."""
        proc = self.processes.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            proc = self.processes.pop(name)
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process started in a session of its own, and its children."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass
    # children (executors, Python workers) of a process that was killed outright
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


@dataclass
class ConnectServer:
    """A Spark Connect server (``sbin/start-connect-server.sh`` kept in the foreground)
    with its own local master."""

    directory: Path
    python: Path | str = field(default_factory=lambda: sys.executable)
    master: str = "local[2]"
    memory: str = "1g"
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> ConnectServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = _environment(self.python, self.directory, self.memory)
        log = self.directory / "connect.log"
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    str(spark_home() / "sbin" / "start-connect-server.sh"),
                    "--master", self.master,
                    "--driver-memory", self.memory,
                    "--conf", f"spark.connect.grpc.binding.port={self.port}",
                    "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                    "--conf", "spark.ui.enabled=false",
                    "--conf", f"spark.pyspark.python={self.python}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.directory,
                start_new_session=True,
            )  # fmt: skip
        _wait("the Spark Connect server", lambda: _port_open(self.port), self.process, log, timeout)
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stop_group(self.process)
            self.process = None
