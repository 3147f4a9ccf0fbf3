"""Check throughput of the lab: the full property suite on synthetic traces of 1 M and
10 M events with local[1] and local[2], beside a single-process pandas total-order check.

    python bench/lab_check.py [--sizes 1000000 10000000] [--masters local[1] local[2]]
        [--shuffle-per-core 1] [--no-pandas] [--repeat R] [--exact] [--no-screen] [--pin]
        [--conf KEY=VALUE ...] [--compare] [--traces DIR ...] [--ceiling]
        [--format ringcast|arrow ...]

Each master runs in a fresh process (a cold JVM); ``--pin`` restricts it to as many
CPUs as it has task slots.

Each run of a synthetic trace has 5 nodes in one configuration; every message is
submitted once and delivered by all 5 nodes in one order (so every property holds and
every check does its full work). The traces are written by ringcast's trace writer
unless ``--format`` says otherwise (:data:`FORMATS`; several formats are timed one
after the other, each in fresh processes). Prints one line per measurement: events, engine,
seconds, trace events per second, and (Linux) the CPU seconds the engine's process
used and the share of the machine's CPU time stolen by its hypervisor meanwhile: on a
shared virtual machine, events per CPU second compare engines where wall time cannot.

``--ceiling`` also runs two ``local[1]`` suites at once, each pinned to a CPU of its
own: two independent copies of the one-core work, with nothing shared but the machine.
Their times against ``local[1]`` alone are the speed-up this machine allows from one
core to two (on a virtual machine whose cores share caches, memory bandwidth and a
hypervisor, less than 2x); ``local[2]`` is measured against that ceiling.

``--traces DIR ...`` times the suite on trace directories instead (for example the
``traces`` of ``ringcast lab run``), with each run's own protocol and its claims: there
most runs have faults, so the exact checks do most of the work.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ringcast.trace.schema import SCHEMA
from ringcast.trace.writer import ParquetTraceWriter

FORMATS = ("ringcast", "arrow")
"""How the synthetic traces are written: ``ringcast``, by ringcast's own trace writer
(:class:`~ringcast.trace.writer.ParquetTraceWriter`: row groups of 65,536 rows, zstd,
dictionaries for the few-valued columns, ``msg`` and ``detail`` plain, ``t`` and ``i``
delta-encoded), as every trace file of the simulator and the runtime is; ``arrow``,
with pyarrow's defaults and one row group per run (every column dictionary-encoded,
snappy), as this benchmark wrote them before."""

NODES = ("A", "B", "C", "D", "E")
MSGS_PER_RUN = 2000


def _add(
    cols: dict[str, list[pa.Array]],
    run: str,
    node: pa.Array,
    t: np.ndarray,
    i: np.ndarray,
    kind: str,
    n: int,
    **kw: object,
) -> None:
    cols["run"].append(pa.array([run] * n))
    cols["node"].append(node)
    cols["t"].append(pa.array(t, pa.int64()))
    cols["i"].append(pa.array(i, pa.int64()))
    cols["kind"].append(pa.array([kind] * n))
    for c in ("msg", "order", "view", "members", "transitional", "size", "detail"):
        v = kw.get(c)
        typ = SCHEMA.field(c).type
        cols[c].append(v if isinstance(v, pa.Array) else pa.array([v] * n, typ))


def make_trace(events: int, path: Path, fmt: str = "ringcast") -> int:
    """Write about ``events`` trace events to ``path`` in format ``fmt`` (of
    :data:`FORMATS`); return the exact count."""
    per_msg = 1 + len(NODES)
    runs = max(1, events // (per_msg * MSGS_PER_RUN))
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r} (known: {', '.join(FORMATS)})")
    if fmt == "ringcast":
        writer = ParquetTraceWriter(path)
        write = writer.write_batch
    else:
        writer = pq.ParquetWriter(path, SCHEMA)
        write = writer.write_table
    total = 0
    k = np.arange(MSGS_PER_RUN, dtype=np.int64)
    sender_idx = k % len(NODES)
    counter = k // len(NODES) + 1
    senders = pa.array(np.array(NODES)[sender_idx])
    msg = pc.binary_join_element_wise(senders, pa.array(counter.astype(str)), ":")
    for r in range(runs):
        run = f"synth:{r}"
        cols: dict[str, list[pa.Array]] = {c: [] for c in SCHEMA.names}

        add = functools.partial(_add, cols, run)

        members = list(NODES)
        add(
            pa.array(list(NODES)),
            np.zeros(5, np.int64),
            np.zeros(5, np.int64),
            "view",
            5,
            view="1",
            members=pa.array([members] * 5, pa.list_(pa.string())),
            transitional=pa.array([False] * 5),
        )
        # the sender's submit comes before its own delivery: i = 2k+1 (submit), deliveries
        # at every node use i = 2k+2; other nodes skip odd indexes (still increasing)
        add(
            senders,
            k * 1000,
            2 * k + 1,
            "submit",
            MSGS_PER_RUN,
            msg=msg,
            order=pa.array(["agreed"] * MSGS_PER_RUN),
            size=pa.array([10] * MSGS_PER_RUN, pa.int32()),
        )
        for j, n in enumerate(NODES):
            add(
                pa.array([n] * MSGS_PER_RUN),
                k * 1000 + 500 + j,
                2 * k + 2,
                "deliver",
                MSGS_PER_RUN,
                msg=msg,
                order=pa.array(["agreed"] * MSGS_PER_RUN),
                size=pa.array([10] * MSGS_PER_RUN, pa.int32()),
            )
        table = pa.Table.from_arrays(
            [pa.concat_arrays(cols[c]) for c in SCHEMA.names], schema=SCHEMA
        )
        write(table)
        total += table.num_rows
    writer.close()
    return total


class Sample(NamedTuple):
    """One measurement: wall seconds, violations found, CPU seconds of the engine's
    process (None where /proc is missing) and the stolen share of the machine's CPU."""

    wall: float
    violations: int
    cpu: float | None
    steal: float | None


def _proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_cpu() -> tuple[int, int] | None:
    """(steal, total) jiffies of the machine so far (Linux), else None."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    ticks = [int(x) for x in first[1:9]]
    return ticks[7], sum(ticks)


def measured(pid: int, fn: Callable[[], int]) -> Sample:
    """Run ``fn`` (returning violations) and sample wall, CPU of ``pid`` and steal."""
    cpu0, m0 = _proc_cpu(pid), _machine_cpu()
    t0 = time.perf_counter()
    bad = fn()
    wall = time.perf_counter() - t0
    cpu1, m1 = _proc_cpu(pid), _machine_cpu()
    cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    steal = None
    if m0 and m1 and m1[1] > m0[1]:
        steal = (m1[0] - m0[0]) / (m1[1] - m0[1])
    return Sample(wall, bad, cpu, steal)


def pandas_total_order(path: Path) -> int:
    """The total-order check in one process with pandas: violations found."""
    import pandas as pd

    df = pd.read_parquet(path, columns=["run", "node", "i", "kind", "msg"])
    d = df[df.kind == "deliver"].drop(columns="kind")
    d = d.groupby(["run", "node", "msg"], as_index=False)["i"].min()
    bad = 0
    nodes = sorted(d.node.unique())
    for a in range(len(nodes)):
        for b in range(a + 1, len(nodes)):
            p = d[d.node == nodes[a]]
            q = d[d.node == nodes[b]]
            m = p.merge(q, on=["run", "msg"], suffixes=("_p", "_q"))
            m = m.sort_values(["run", "i_p"])
            prev = m.groupby("run")["i_q"].shift()
            bad += int((m.i_q < prev).sum())
    return bad


MODES: dict[str, dict[str, bool]] = {
    "all properties": {},
    "no screen     ": {"screen": False},
    "exact checks  ": {"certify": False},
}
"""How the suite is run: the default (the screen, then the certificate, then the exact
checks), without the screen (``--no-screen``), and the exact checks alone (``--exact``)."""


def spark_suite(
    path: Path,
    master: str,
    per_core: int = 1,
    repeat: int = 1,
    mode: str = "all properties",
    conf: dict[str, str] | None = None,
) -> list[Sample]:
    """The full suite ``repeat`` times in one SparkSession, one sample each (the CPU is
    the JVM's). The first is cold (a fresh JVM compiles its code as it goes); later
    ones are warm."""
    from ringcast.lab.checks import run_checks
    from ringcast.lab.load import load_traces
    from ringcast.lab.properties import PROPERTIES
    from ringcast.lab.session import spark_session

    cores = int(master[6:-1]) if master.startswith("local[") else 2
    spark = spark_session(master, shuffle_partitions=per_core * cores, conf=conf)
    out = []
    try:
        trace = load_traces(spark, [path], protocol="synth")
        jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]

        def suite() -> int:
            results = run_checks(trace, overrides={"synth": PROPERTIES}, **MODES[mode])
            return sum(r.violations for r in results)

        for _ in range(repeat):
            out.append(measured(jvm_pid, suite))
        return out
    finally:
        spark.stop()


def _line(events: int, s: Sample) -> str:
    line = f"{s.wall:8.2f} s  {events / s.wall:12,.0f} events/s"
    if s.cpu:
        line += f"  cpu {s.cpu:7.2f} s  {events / s.cpu:12,.0f} events/cpu-s"
    if s.steal is not None:
        line += f"  steal {100 * s.steal:3.0f}%"
    return f"{line}  violations {s.violations}"


def _cores(master: str) -> int:
    return int(master[6:-1]) if master.startswith("local[") and master[6:-1].isdigit() else 0


def spark_in_child(
    path: Path,
    master: str,
    per_core: int,
    repeat: int,
    mode: str,
    pin: bool,
    conf: dict[str, str] | None = None,
    cpus: list[int] | None = None,
) -> list[Sample]:
    """:func:`spark_suite` in a fresh Python process, so that each master starts a
    cold JVM; with ``pin`` (Linux), the process and its JVM may run on as many CPUs as
    the master has task slots, so that ``local[1]`` gets one core, JIT and GC
    included, and ``local[2]`` two; ``cpus`` names them instead."""
    cmd = [sys.executable, __file__, "--child", str(path), master, str(per_core)]
    cmd += [str(repeat), mode, json.dumps(conf or {})]
    if cpus is None:
        cpus = sorted(os.sched_getaffinity(0))[: _cores(master)] if pin else []

    def restrict() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    done = subprocess.run(cmd, preexec_fn=restrict, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{master}: the suite failed\n{done.stderr[-2000:]}")
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    return [Sample(**json.loads(ln)) for ln in rows]


def main() -> None:
    if len(sys.argv) == 8 and sys.argv[1] == "--child":
        path, master, per_core, repeat, mode, conf = sys.argv[2:]
        samples = spark_suite(
            Path(path), master, int(per_core), int(repeat), mode, json.loads(conf)
        )
        for sample in samples:
            print(json.dumps(sample._asdict()), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    ap.add_argument("--no-pandas", action="store_true")
    ap.add_argument(
        "--shuffle-per-core", type=int, default=1, help="shuffle partitions per core (default 1)"
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the suite this many times per session (the first cold, the rest warm)",
    )
    ap.add_argument(
        "--exact",
        action="store_true",
        help="also time the exact checks alone (no screen, no certificate) per master",
    )
    ap.add_argument(
        "--no-screen",
        action="store_true",
        help="also time the suite without the screen (the certificate, then the exact checks)",
    )
    ap.add_argument(
        "--pin",
        action="store_true",
        help="run local[N] on N CPUs only (JIT and GC threads included; Linux)",
    )
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for every master (repeatable); with --compare, the "
        "settings of a second configuration timed after the first",
    )
    ap.add_argument(
        "--compare",
        action="store_true",
        help="time each master twice, without and with the --conf settings",
    )
    ap.add_argument(
        "--traces",
        type=Path,
        nargs="+",
        default=[],
        metavar="DIR",
        help="time the suite on these trace directories instead of synthetic traces",
    )
    ap.add_argument(
        "--format",
        nargs="+",
        choices=FORMATS,
        default=["ringcast"],
        help="how the synthetic traces are written (default: ringcast's trace writer)",
    )
    ap.add_argument(
        "--ceiling",
        action="store_true",
        help="also run two local[1] suites at once, one per CPU (Linux): the speed-up "
        "the machine itself allows from one core to two",
    )
    args = ap.parse_args()
    conf = dict(kv.split("=", 1) for kv in args.conf)
    confs = [("", {}), (" +conf", conf)] if args.compare else [("", conf)]
    with tempfile.TemporaryDirectory() as tmp:
        synthetic: list[tuple[Path, int | None, str]] = [
            (Path(tmp) / f"trace-{fmt}-{s}.parquet", s, fmt)
            for s in args.sizes
            for fmt in args.format
        ]
        inputs = [(d, None, "") for d in args.traces] or synthetic
        for path, size, fmt in inputs:
            tag_fmt = f" [{fmt}]" if len(args.format) > 1 else ""
            if size is None:
                n = ds.dataset(path, format="parquet", partitioning="hive").count_rows()
            else:
                n = make_trace(size, path, fmt)
                if tag_fmt:
                    print(f"{n:>10} events  written as {fmt}: {path.stat().st_size:,} bytes")
            if not args.no_pandas and size is not None:
                sample = measured(os.getpid(), functools.partial(pandas_total_order, path))
                line = _line(n, sample)
                print(f"{n:>10} events  pandas total_order{tag_fmt}  {line}", flush=True)
            modes = [
                m for m, on in zip(MODES, (True, args.no_screen, args.exact), strict=True) if on
            ]
            for master, mode, (tag, settings) in itertools.product(args.masters, modes, confs):
                runs = spark_in_child(
                    path, master, args.shuffle_per_core, args.repeat, mode, args.pin, settings
                )
                label = mode + tag + tag_fmt
                for k, sample in enumerate(runs):
                    print(
                        f"{n:>10} events  spark {master:9} {label} "
                        f"{'cold' if k == 0 else 'warm'}  {_line(n, sample)}",
                        flush=True,
                    )
            if args.ceiling:
                both = ceiling(path, args.shuffle_per_core, args.repeat, conf)
                for copy, (cpu, runs) in enumerate(both):
                    for k, sample in enumerate(runs):
                        print(
                            f"{n:>10} events  spark local[1]x2 copy {copy} "
                            f"on cpu {cpu}{tag_fmt}    "
                            f"{'cold' if k == 0 else 'warm'}  {_line(n, sample)}",
                            flush=True,
                        )


def ceiling(
    path: Path, per_core: int, repeat: int, conf: dict[str, str]
) -> list[tuple[int, list[Sample]]]:
    """Two ``local[1]`` suites at once, each in its own process pinned to its own CPU
    (the first two this process may use): per copy, its CPU and its samples."""
    from concurrent.futures import ThreadPoolExecutor

    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        raise SystemExit("--ceiling needs two CPUs")
    with ThreadPoolExecutor(2) as pool:
        futures = [
            pool.submit(spark_in_child, path, "local[1]", per_core, repeat, True, True, conf, [c])
            for c in cpus
        ]
        return [(c, f.result()) for c, f in zip(cpus, futures, strict=True)]


if __name__ == "__main__":
    main()
