"""``ringcast lab``: the PySpark pipeline (sweep, check, metrics, report, run)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_SWEEP = Path("sweeps") / "default.toml"


def _say(line: str) -> None:
    print(f"ringcast lab: {line}", file=sys.stderr, flush=True)


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` settings (``LabError`` for a malformed one)."""
    from ringcast.lab.errors import LabError

    conf: dict[str, str] = {}
    for item in args.conf or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LabError(f"--conf {item!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    return conf


def _check_spark_args(args: argparse.Namespace) -> None:
    """Everything about where Spark runs that can be checked before it starts: the
    ``--conf`` syntax, the master or Connect URL's syntax, and that it listens."""
    from ringcast.lab.masters import check_where
    from ringcast.lab.session import resolve_master, resolve_remote

    _spark_conf(args)
    remote = resolve_remote(args.remote)
    check_where(args.master if remote else resolve_master(args.master), remote)


def _spark(args: argparse.Namespace) -> Any:
    """The session, after saying where it runs (master, executors, cores) and what it
    shipped to the executors, one line each."""
    from ringcast.lab.session import spark_session, where

    _check_spark_args(args)
    spark = spark_session(
        args.master,
        remote=args.remote,
        ui=args.ui,
        conf=_spark_conf(args),
        ship_package=False if args.no_ship else None,
        say=_say,
        verbose=args.verbose,
    )
    _say(where(spark).line())
    return spark


def _guard(fn: Any) -> Any:
    """Turn the lab's input errors into the CLI's one-line errors (exit 2)."""

    def handler(args: argparse.Namespace) -> int:
        from ringcast.cli.main import CliError
        from ringcast.lab.errors import LabError
        from ringcast.sim.scenario import ScenarioError
        from ringcast.trace.validate import TraceSchemaError

        try:
            return int(fn(args))
        except (LabError, ScenarioError, TraceSchemaError) as e:
            raise CliError(str(e)) from None
        except Exception as e:
            if not _out_of_memory(e):
                raise
            raise CliError(_out_of_memory_line(args)) from None

    return handler


OUT_OF_MEMORY = (
    "Spark ran out of memory. What was written to --out is kept: give the lab more memory "
    "(RINGCAST_DRIVER_MEMORY=8g for local Spark, default 4g; --conf spark.executor.memory="
    "... on a cluster), or use more --partitions, then run `ringcast lab check OUT` again"
)
SWEEP_OUT_OF_MEMORY = (
    "Spark ran out of memory while the sweep ran, before its traces were written: give "
    "the lab more memory (RINGCAST_DRIVER_MEMORY=8g for local Spark, default 4g; --conf "
    "spark.executor.memory=... on a cluster), or run the sweep in more tasks "
    "(--partitions) or in parts (--seeds)"
)
_OOM_MARKERS = ("OutOfMemoryError", "UNABLE_TO_ACQUIRE_MEMORY", "Java heap space")


def _out_of_memory_line(args: argparse.Namespace) -> str:
    """What to do when Spark ran out of memory: a command that sweeps (``--out``) and
    has no complete traces there lost its sweep; otherwise the traces are kept and can
    be checked again."""
    from ringcast.lab.load import TRACES_DIR

    out = getattr(args, "out", None)
    if getattr(args, "sweep", None) is None or not isinstance(out, Path):
        return OUT_OF_MEMORY
    return OUT_OF_MEMORY if (out / TRACES_DIR / "_SUCCESS").exists() else SWEEP_OUT_OF_MEMORY


def _out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` (a Spark job's failure as PySpark raises it) is the JVM out of memory."""
    text = str(e)
    return any(m in text for m in _OOM_MARKERS)


def _claims(args: argparse.Namespace) -> dict[str, frozenset[str]] | None:
    from ringcast.lab.errors import LabError
    from ringcast.lab.properties import parse_claims

    if not args.claims:
        return None
    try:
        return parse_claims(args.claims)
    except ValueError as e:
        raise LabError(str(e)) from None


def _check_numbers(args: argparse.Namespace) -> None:
    """The numeric options a command has, checked before Spark starts."""
    from ringcast.lab.errors import LabError

    for name, least in (("seeds", 1), ("partitions", 0), ("examples", 0)):
        value = getattr(args, name, None)
        if value is not None and value < least:
            raise LabError(f"--{name}: expected an integer >= {least}, got {value}")
    for name in ("convergence_bound", "progress_bound"):
        value = getattr(args, name, None)
        if value is not None and not value > 0:
            raise LabError(f"--{name.replace('_', '-')}: expected seconds > 0, got {value:g}")


def _check_out(out: Path, what: str = "--out") -> None:
    """An output directory must not be an existing file."""
    from ringcast.lab.errors import LabError

    if out.exists() and not out.is_dir():
        raise LabError(f"{what} {out}: is a file, not a directory")


def _load_sweep(args: argparse.Namespace, sweep_file: Path, out: Path) -> Any:
    """The sweep, with every input checked (before Spark starts)."""
    from ringcast.lab.grid import load_sweep

    _check_numbers(args)
    _check_out(out)
    sweep = load_sweep(sweep_file, seeds=args.seeds)
    _check_spark_args(args)
    return sweep


def _sweep(args: argparse.Namespace, sweep: Any, out: Path, spark: Any = None) -> dict[str, Any]:
    from ringcast.cli.progress import ProgressBar
    from ringcast.lab.pipeline import record_where
    from ringcast.lab.session import where
    from ringcast.lab.sweep import run_sweep

    if sweep.skipped and not args.quiet:
        print(_skipped_line(sweep.skipped), file=sys.stderr)
    spark = spark if spark is not None else _spark(args)
    bar = None if args.quiet else ProgressBar(f"sweep {sweep.name} ({len(sweep.runs)} runs)")
    summary = run_sweep(spark, sweep, out, partitions=args.partitions, progress=bar)
    record_where(out, "sweep", where(spark))
    if not args.quiet:
        print(
            f"sweep {sweep.name}: {summary['runs']} runs in {summary['wall_s']} s "
            f"({summary['runs_per_second']} runs/s, {summary['partitions']} partitions) -> {out}"
        )
    return summary


def _skipped_line(skipped: list[str]) -> str:
    """One line for the grid points the sweep skipped (each is in ``sweep.json``)."""
    files: dict[str, int] = {}
    for s in skipped:
        name = s.split(" at ", 1)[0] if " at " in s else s.split(":", 1)[0]
        files[name] = files.get(name, 0) + 1
    listed = ", ".join(f"{f} ({n})" for f, n in sorted(files.items()))
    return (
        f"skipped {len(skipped)} grid points that a scenario cannot take: {listed}"
        " (the reasons are in sweep.json under 'skipped')"
    )


def _print_check(doc: dict[str, Any]) -> None:
    """The properties as a table (rich), then each counterexample on a line of its own
    (those of expected violations marked so). The columns of expected violations
    appear when there are some."""
    from rich.console import Console
    from rich.table import Table

    styles = {"holds": "green", "violated": "bold red", "violated as expected": "yellow"}
    props = doc["properties"]
    expected = any(p.get("runs_expected") for p in props.values())
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    columns = [
        ("property", "left"),
        ("status", "left"),
        ("runs checked", "right"),
        ("runs violated", "right"),
        ("violations", "right"),
    ]
    if expected:
        columns += [("runs expected", "right"), ("expected violations", "right")]
    for col, just in columns:
        table.add_column(col, justify=just, no_wrap=col == "status")  # type: ignore[arg-type]
    for name, p in props.items():
        status = p["status"]
        row = [
            name,
            f"[{styles.get(status, 'dim')}]{status}[/]",
            str(p["runs_checked"]),
            str(p.get("runs_violated", 0)),
            str(p["violations"]),
        ]
        if expected:
            row += [str(p.get("runs_expected", 0)), str(p.get("expected_violations", 0))]
        table.add_row(*row)
    console = Console(file=sys.stdout, highlight=False, width=max(120, Console().width))
    console.print(table)
    for j in doc.get("judged_crashed") or []:
        print(f"  {j['run']}: {j['note']}")
    for name, p in props.items():
        for c in p["counterexamples"]:
            t = f"{c['t'] / 1e6:.3f}ms" if c.get("t") is not None else "-"
            mark = " (expected)" if c.get("expected") else ""
            print(
                f"  {name}{mark}: {c['run']} t={t} nodes={','.join(c['nodes'] or [])}: {c['note']}"
            )


def _print_expected(doc: dict[str, Any]) -> None:
    """A line per property a declared expectation saw violated (``EXPECTED``: where,
    in how many runs, why), then one per expectation no run fulfilled (``WARNING``)."""
    for e in doc.get("expectations") or []:
        at = ",".join(f"{k}={v}" for k, v in e["where"].items())
        where = f"{e['protocol']} at {at}" if at else e["protocol"]
        for prop, runs in e["runs_violated"].items():
            if runs:
                print(f"EXPECTED: {prop} violated by {where} in {runs} runs: {e['why']}")
    for w in doc.get("warnings") or []:
        print(f"WARNING: {w}")


@_guard
def cmd_sweep(args: argparse.Namespace) -> int:
    _sweep(args, _load_sweep(args, args.sweep, args.out), args.out)
    return 0


def _check_traces(args: argparse.Namespace, paths: list[Path]) -> None:
    """The inputs of ``check`` and ``metrics``, checked before Spark starts: the
    numbers, ``--json``'s place, the trace paths (found and schema-checked) and
    where Spark runs."""
    from ringcast.lab.load import trace_inputs
    from ringcast.lab.masters import check_one_of

    check_one_of(getattr(args, "master", None), getattr(args, "remote", None))
    _check_numbers(args)
    if getattr(args, "json", None) is not None and args.json.is_dir():
        from ringcast.lab.errors import LabError

        raise LabError(f"--json {args.json}: is a directory, not a file")
    trace_inputs(paths, protocol=args.protocol)
    _check_spark_args(args)


def _check(args: argparse.Namespace, paths: list[Path]) -> dict[str, Any]:
    from ringcast.lab.pipeline import check_paths

    overrides = _claims(args)
    _check_traces(args, paths)
    return check_paths(
        _spark(args),
        paths,
        protocol=args.protocol,
        overrides=overrides,
        examples=args.examples,
        convergence_bound=args.convergence_bound,
        progress_bound=int(args.progress_bound * 1e9),
        certify=getattr(args, "certify", True),
    )


@_guard
def cmd_check(args: argparse.Namespace) -> int:
    from ringcast.lab.pipeline import write_json

    doc = _check(args, args.dirs)
    if args.json:
        write_json(args.json, doc)
    _print_check(doc)
    _print_expected(doc)
    return 0 if doc["ok"] else 1


@_guard
def cmd_metrics(args: argparse.Namespace) -> int:
    from ringcast.lab.pipeline import metrics_paths, write_json

    _check_traces(args, args.dirs)
    doc = metrics_paths(_spark(args), args.dirs, protocol=args.protocol)
    if args.json:
        write_json(args.json, doc)
    for g in doc["groups"]:
        print(
            f"{g['protocol']:10} {g['scenario']:28} {g['point']:30} "
            f"{g['messages_per_s']:10.1f} msg/s  {g['packets_per_message'] or 0:8.2f} pkt/msg"
        )
    for r in doc["latency"]:
        print(
            f"{r['protocol']:10} {r['scenario']:28} {r['order']:7} latency ms p50 {r['p50_ms']:.2f}"
            f" p95 {r['p95_ms']:.2f} p99 {r['p99_ms']:.2f} max {r['max_ms']:.2f}"
        )
    for r in doc["convergence"]:
        print(
            f"{r['protocol']:10} {r['action']:10} faults {r['faults']:5} convergence ms "
            f"p50 {r['p50_ms']} p95 {r['p95_ms']} max {r['max_ms']}"
        )
    if args.json is None:
        print(json.dumps({"groups": len(doc["groups"])}))
    return 0


@_guard
def cmd_report(args: argparse.Namespace) -> int:
    from ringcast.lab.errors import LabError
    from ringcast.lab.pipeline import report_dir

    if not args.dir.is_dir():
        raise LabError(f"{args.dir}: no such directory")
    if args.out.is_dir():
        raise LabError(f"--out {args.out}: is a directory (give the report's file name)")
    dirs = [args.dir] if args.twin is None else [args.dir, args.twin]
    for d in dirs[1:]:
        if not d.is_dir():
            raise LabError(f"--twin {d}: no such directory")
    for d in dirs:
        if not (d / "check.json").exists() or not (d / "metrics.json").exists():
            _check_traces(args, [d])  # Spark computes them: check its inputs first
    started: list[Any] = []  # one session, started at most once, for both directories

    def spark() -> Any:
        if not started:
            started.append(_spark(args))
        return started[0]

    out = report_dir(spark, args.dir, args.out, twin=args.twin, protocol=args.protocol)
    print(f"report -> {out}")
    return 0


@_guard
def cmd_timeline(args: argparse.Namespace) -> int:
    from ringcast.lab.spacetime import read_run, run_file_name, write_timeline

    _, run, _ = read_run(args.dir, args.run)
    out = args.out or Path(run_file_name(run))
    write_timeline(args.dir, out, run=run, protocol=args.protocol)
    print(f"space-time diagram of {run} -> {out}")
    return 0


def _phase_times(spark_s: float, sweep_s: float, times: dict[str, float], wall: float) -> str:
    """One line: the wall time of each phase of ``lab run``, in the order they ran, and
    what is left of the total (reading the sweep file, the table printed)."""
    phases = [("spark start", spark_s), ("sweep", sweep_s)]
    phases += [(k, times[k]) for k in ("check", "metrics", "report") if k in times]
    rest = wall - sum(v for _, v in phases)
    cells = [f"{k} {v:.1f} s" for k, v in phases] + [f"other {max(rest, 0.0):.1f} s"]
    return f"phases: {', '.join(cells)}; total {wall:.1f} s"


def _summary_line(doc: dict[str, Any]) -> tuple[list[str], list[str], list[str], list[str]]:
    """(held, violated, violated as expected, not applicable) property names of a
    ``check.json`` document."""
    props = doc["properties"]
    held = [n for n, p in props.items() if p["status"] == "holds"]
    bad = [n for n, p in props.items() if p["status"] == "violated"]
    expected = [n for n, p in props.items() if p["status"] == "violated as expected"]
    na = [n for n, p in props.items() if p["status"] == "not applicable"]
    return held, bad, expected, na


@_guard
def cmd_run(args: argparse.Namespace) -> int:
    import time

    from ringcast.lab.pipeline import run_pipeline

    t0 = time.perf_counter()
    out: Path = args.out
    overrides = _claims(args)
    sweep = _load_sweep(args, args.sweep, out)  # every input checked before Spark starts
    t_spark = time.perf_counter()
    spark = _spark(args)  # one session for sweep, check, metrics and report
    t_spark = time.perf_counter() - t_spark
    summary = _sweep(args, sweep, out, spark=spark)
    bar = None if args.quiet else _phases_bar()
    doc, report, times = run_pipeline(
        spark,
        out,
        overrides=overrides,
        examples=args.examples,
        convergence_bound=args.convergence_bound,
        progress_bound=int(args.progress_bound * 1e9),
        progress=bar,
    )
    _print_check(doc)
    held, bad, expected, na = _summary_line(doc)
    wall = time.perf_counter() - t0
    print(
        f"lab run: {summary['runs']} runs ({len(summary['skipped'])} points skipped), "
        f"{len(held)} properties hold, {len(bad)} violated, "
        f"{len(expected)} violated as expected, {len(na)} not applicable; "
        f"sweep {summary['wall_s']:.0f} s, check {times['check']:.0f} s, "
        f"metrics {times['metrics']:.0f} s, total {wall:.0f} s"
    )
    print(_phase_times(t_spark, summary["wall_s"], times, wall))
    if bad:
        print(f"VIOLATED: {', '.join(bad)} (counterexamples in the report)")
    _print_expected(doc)
    print(f"report: {report}  (traces, check.json, metrics.json in {out})")
    return 0 if doc["ok"] else 1


def _phases_bar() -> Any:
    from ringcast.cli.progress import ProgressBar

    return ProgressBar("check, metrics, report", delay=0.0)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--master", default=None, help="Spark master (default: SPARK_MASTER or local[*])"
    )
    p.add_argument(
        "--remote",
        default=None,
        help="Spark Connect server sc://HOST:PORT instead of a master (default: SPARK_REMOTE)",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="any Spark setting, as spark-submit's --conf (repeatable)",
    )
    p.add_argument(
        "--no-ship",
        action="store_true",
        help="do not ship ringcast to the executors (they have it installed)",
    )
    p.add_argument("--ui", action="store_true", help="enable the Spark web UI")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show Spark's and the JVM's own log output (hidden by default)",
    )


def _checking(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--claims", default=None, help="properties per protocol: 'all' or 'proto=p1+p2;proto2=p3'"
    )
    p.add_argument("--examples", type=int, default=5, help="counterexamples kept per property")
    p.add_argument(
        "--convergence-bound",
        type=float,
        default=10.0,
        help="failure-detection timeouts of the protocol that no unsettled period after "
        "the last fault may exceed (convergence)",
    )
    p.add_argument(
        "--progress-bound",
        type=float,
        default=1.0,
        help="seconds a live node with undelivered messages of its own may go without "
        "a delivery (delivery_progress)",
    )


def _sweeping(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=int, default=None, help="seeds per point (overrides file)")
    p.add_argument("--partitions", type=int, default=None, help="Spark tasks for the runs")
    p.add_argument("-q", "--quiet", action="store_true")


def register(sub: Any) -> None:
    lab = sub.add_parser("lab", help="PySpark lab: sweep, check, metrics, report, run")
    labsub = lab.add_subparsers(dest="lab_command", metavar="LAB_COMMAND")
    labsub.required = True

    s = labsub.add_parser("sweep", help="run a sweep of simulations on Spark")
    s.add_argument("sweep", type=Path, help="sweep TOML file")
    s.add_argument("--out", type=Path, required=True, help="output directory")
    _sweeping(s)
    _common(s)
    s.set_defaults(func=cmd_sweep)

    s = labsub.add_parser("check", help="check the safety properties over traces")
    s.add_argument("dirs", nargs="+", type=Path, help="sweep outputs, trace dirs or files")
    s.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    s.add_argument("--protocol", default=None, help="protocol of traces that do not say")
    s.add_argument(
        "--no-certify",
        dest="certify",
        action="store_false",
        help="run the exact checks on every run (no screen, no certificate)",
    )
    _checking(s)
    _common(s)
    s.set_defaults(func=cmd_check)

    s = labsub.add_parser("metrics", help="measure throughput, latency, convergence, cost")
    s.add_argument("dirs", nargs="+", type=Path)
    s.add_argument("--json", type=Path, default=None)
    s.add_argument("--protocol", default=None)
    _common(s)
    s.set_defaults(func=cmd_metrics)

    s = labsub.add_parser("report", help="write one self-contained HTML report")
    s.add_argument("dir", type=Path)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--protocol", default=None)
    s.add_argument(
        "--twin",
        type=Path,
        default=None,
        help="the same runs' other half (live for a simulated DIR, or the reverse): "
        "shown side by side, differences flagged",
    )
    _common(s)
    s.set_defaults(func=cmd_report)

    s = labsub.add_parser(
        "timeline", help="draw the space-time diagram of one run (simulated or real)"
    )
    s.add_argument(
        "dir", type=Path, help="a sweep output, a 'ringcast sim' output or a runtime trace"
    )
    s.add_argument("--run", default=None, help="the run (needed when DIR holds several)")
    s.add_argument("--out", type=Path, default=None, help="HTML file (default: RUN.html here)")
    s.add_argument("--protocol", default=None, help="protocol named in the title")
    s.set_defaults(func=cmd_timeline)

    s = labsub.add_parser("run", help="default sweep, then check, metrics and report")
    s.add_argument("--out", type=Path, default=Path("lab-out"))
    s.add_argument("--sweep", type=Path, default=DEFAULT_SWEEP)
    _sweeping(s)
    _checking(s)
    _common(s)
    s.set_defaults(func=cmd_run)
