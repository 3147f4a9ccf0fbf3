"""Rules that depend on a protocol's documented guarantees (Raincore's decisions)."""

from __future__ import annotations

from typing import Any

from lab_traces import MS, _row, clean_trace, renumber, to_table

from ringcast.lab.checks import run_checks
from ringcast.lab.checks.runner import HOLDS, VIOLATED
from ringcast.lab.properties import PROPERTIES


def _check(spark: Any, rows: list[dict[str, Any]], protocol: str, prop: str, **kw: Any) -> Any:
    from pyspark.sql import functions as F

    frame = (
        spark.createDataFrame(to_table(renumber(rows)))
        .withColumn("protocol", F.lit(protocol))
        .withColumn("scenario", F.lit("synthetic"))
    )
    (result,) = run_checks(
        frame, overrides={protocol: PROPERTIES}, examples=100, properties=[prop], **kw
    )
    return result


def _eat(run: str, node: str, start: int, end: int, view_state: str) -> list[dict[str, Any]]:
    return [
        _row(run, node, start, "state", detail={"token_state": "Eating", "view_state": view_state}),
        _row(run, node, end, "state", detail={"token_state": "Hungry", "view_state": view_state}),
    ]


def test_single_token_ignores_an_unconfirmed_copy(spark: Any) -> None:
    # A eats on the confirmed token while B eats on a rerouted copy still in Chaos: the
    # stale copy grants nothing and commits nothing (Raincore decisions 14, 19).
    rows = clean_trace("stale") + _eat("stale", "A", 600 * MS, 610 * MS, "agreement")
    rows += _eat("stale", "B", 605 * MS, 615 * MS, "chaos")
    assert _check(spark, rows, "raincore", "single_token").status == HOLDS
    both = clean_trace("both") + _eat("both", "A", 600 * MS, 610 * MS, "agreement")
    both += _eat("both", "B", 605 * MS, 615 * MS, "agreement")
    result = _check(spark, both, "raincore", "single_token")
    assert result.status == VIOLATED
    assert {tuple(sorted(c["nodes"])) for c in result.counterexamples} == {("A", "B")}


def _final_views(
    run: str, ids: dict[str, str], members: dict[str, list[str]] | None = None
) -> list[dict[str, Any]]:
    rows = clean_trace(run)
    for node, view in ids.items():
        listed = (members or {}).get(node, ["A", "B", "C"])
        rows.append(
            _row(run, node, 900 * MS, "view", view=view, members=listed, transitional=False)
        )
    return rows


def test_convergence_on_members_where_the_protocol_says_so(spark: Any) -> None:
    # C committed the unchanged membership at an index the others skipped (decision 14).
    rows = _final_views("idx", {"A": "3", "B": "3", "C": "4"})
    assert _check(spark, rows, "raincore", "convergence").status == HOLDS
    # For Totem two ring ids are two rings, even with the same members.
    result = _check(spark, rows, "totem", "convergence")
    assert result.status == VIOLATED  # split from 900 ms to the end at 2 s: over 1 s
    assert "unsettled for 1,100 ms from 900 ms" in result.counterexamples[0]["note"]


def test_convergence_compares_member_sets_not_lists(spark: Any) -> None:
    """One configuration listed in other orders at each node is still one: the final
    configurations are compared as canonical strings (a regression: comparing the
    arrays themselves once split one configuration in two)."""
    orders = {"A": ["C", "B", "A"], "B": ["B", "C", "A"], "C": ["C", "B", "A"]}
    rows = _final_views("perm", {"A": "5", "B": "5", "C": "5"}, orders)
    for protocol in ("raincore", "totem"):
        assert _check(spark, rows, protocol, "convergence").status == HOLDS, protocol
    short = _final_views("short", {"A": "5", "B": "5", "C": "5"}, {"C": ["C", "A"]})
    result = _check(spark, short, "totem", "convergence")
    assert result.status == VIOLATED
    assert "unsettled for 1,100 ms" in result.counterexamples[0]["note"]


def test_message_ids_parse_into_sender_and_counter(spark: Any) -> None:
    """``sender:counter``: the sender before the last colon, the counter after it when
    it is all ASCII digits and fits a long (fifo and the certificate share the parse)."""
    from ringcast.lab.checks.context import msg_counter, msg_sender

    cases = {
        "A:1": ("A", 1),
        "A:B:12": ("A:B", 12),
        "A:0012": ("A", 12),
        ":5": ("", 5),
        "nocolon": ("", None),
        "A:": ("A", None),
        "A:x5": ("A", None),
        "A:+5": ("A", None),
        "A:-5": ("A", None),
        "A: 5": ("A", None),
        "A:1a": ("A", None),
        "A:99999999999999999999": ("A", None),
        "é:3": ("é", 3),
        None: (None, None),
    }
    df = spark.createDataFrame([(m,) for m in cases], "msg string")
    got = {
        r.msg: (r.sender, r.counter)
        for r in df.select(
            "msg", msg_sender().alias("sender"), msg_counter().alias("counter")
        ).collect()
    }
    assert got == cases


def test_checks_run_without_adaptive_execution_and_restore_it(spark: Any, monkeypatch: Any) -> None:
    """Adaptive query execution is off while the checks run (seen from the violation
    count), and the session's own setting comes back afterwards, whatever it was."""
    from ringcast.lab.checks import runner

    seen: list[str] = []
    count = runner._count

    def spy(ctx: Any, *args: Any) -> None:
        seen.append(ctx.trace.sparkSession.conf.get(runner.ADAPTIVE))
        count(ctx, *args)

    monkeypatch.setattr(runner, "_count", spy)
    rows = clean_trace("aqe")
    for before in ("true", "false"):
        spark.conf.set(runner.ADAPTIVE, before)
        # without the screen, which would clear the clean run before any count
        assert _check(spark, rows, "raincore", "view_agreement", screen=False).status == HOLDS
        assert spark.conf.get(runner.ADAPTIVE) == before
    spark.conf.unset(runner.ADAPTIVE)
    assert seen == ["false"] * 2  # two checks of view_agreement: one round each
