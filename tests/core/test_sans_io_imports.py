"""The sans-IO core, the layers and every protocol machine import nothing of the trace
format's or the lab's libraries: they load in a Python where ``pyarrow``, ``pyspark`` and
``pandas`` cannot be imported (a meta-path finder refuses them), in a subprocess so that
this test's own imports do not count."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import importlib
    import importlib.abc
    import pkgutil
    import sys

    BLOCKED = ("pyarrow", "pyspark", "pandas")

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is refused in this test")
            return None

    sys.meta_path.insert(0, Refuse())

    import ringcast.core
    import ringcast.layers
    import ringcast.protocols

    loaded = []
    for package in (ringcast.core, ringcast.layers, ringcast.protocols):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
            loaded.append(info.name)

    from ringcast.protocols import registry

    for name in registry.installed_names():
        registry.get(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not leaked, leaked
    print(len(loaded))
    """
)


def test_core_and_protocols_import_without_arrow_spark_or_pandas() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) > 30  # core, layers and every family's modules


def test_the_trace_rows_module_re_exports_the_core_sink() -> None:
    from ringcast.core import tracerows
    from ringcast.trace import rows

    assert rows.TraceSink is tracerows.TraceSink
    assert rows.host_detail is tracerows.host_detail
    assert rows.record_columns is tracerows.record_columns


TASK = textwrap.dedent(
    """
    import importlib.abc
    import sys
    import tomllib

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("pydantic", "pydantic_core"):
                raise ImportError(f"{name} is refused in this test")
            return None

    sys.meta_path.insert(0, Refuse())

    from ringcast.lab.sweep import RunSpec, simulate

    doc = tomllib.loads(open(sys.argv[1]).read())
    spec = RunSpec(
        run="crash:1", protocol="raincore", scenario="crash", point="", params="{}",
        seed=1, nodes=4, scenario_index=0,
    )
    table = simulate(spec, doc)
    assert "error" not in set(table.column("kind").to_pylist()), table.slice(0, 3)
    print(table.num_rows)
    """
)


def test_a_sweep_task_runs_where_pydantic_cannot_be_imported() -> None:
    """A Spark executor runs only the ringcast the driver shipped it (a zip of pure
    Python): a sweep's task parses its scenario document, which the driver validated
    against the file schema, and simulates it without pydantic."""
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "raincore" / "crash.toml"
    proc = subprocess.run(
        [sys.executable, "-c", TASK, str(scenario)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) > 100
