"""The interpreter's trace rows through the one trace sink: records split as make_row
splits them, packet rows naming their network, the sink's index, clock and limit."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ringcast.core.codec import encode_body, wire
from ringcast.core.effects import EVERY_NETWORK, Multicast, Record, Send
from ringcast.core.interpreter import Interpreter
from ringcast.trace.rows import TraceSink, make_row, record_columns
from ringcast.trace.schema import COLUMNS, Row


@wire(0xFE31)
@dataclass(frozen=True, slots=True)
class Probe:
    n: int


class _IO:
    def __init__(self) -> None:
        self.out: list[tuple[Any, ...]] = []

    def send(self, dst: str, msg: Any, networks: tuple[int, ...]) -> None:
        self.out.append(("send", dst, networks))

    def multicast(self, msg: Any, networks: tuple[int, ...]) -> None:
        self.out.append(("multicast", networks))

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


def _interp(networks: int = 2, packets: bool = True) -> tuple[Interpreter, TraceSink, _IO]:
    sink = TraceSink("r", "A", index=itertools.count().__next__)
    io = _IO()
    return Interpreter("A", io, sink, networks=networks, packets=packets), sink, io


def _rows(sink: TraceSink) -> list[Row]:
    return [Row(*r) for r in sink.rows]


def test_the_sinks_rows_are_rows_of_the_schema() -> None:
    assert Row._fields == COLUMNS
    sink = TraceSink("r", "A", index=itertools.count(5).__next__)
    sink.add(7, "send", size=3, detail='{"type":"X"}', network=1)
    sink.add(8, "view", None, None, "4", ["A"], False)
    assert _rows(sink) == [
        Row("r", "A", 7, 5, "send", size=3, detail='{"type":"X"}', network=1),
        Row("r", "A", 8, 6, "view", view="4", members=["A"], transitional=False),
    ]


def test_the_sink_shifts_the_hosts_time_and_calls_on_full_at_its_limit() -> None:
    full: list[int] = []
    sink = TraceSink("r", "A", index=itertools.count().__next__, shift=40, limit=2, on_full=None)
    sink.on_full = lambda: full.append(len(sink.rows))
    sink.add(1, "a")
    assert full == []
    sink.add(2, "b")
    assert full == [2] and [r[2] for r in sink.rows] == [41, 42]


def test_a_record_is_split_as_make_row_splits_it() -> None:
    fields = {"view": 7, "members": ("A", "B"), "size": 3, "network": 1, "t": 9, "x": "y"}
    interp, sink, _ = _interp()
    interp.apply([Record("custom", fields)], 100)
    (row,) = _rows(sink)
    cols, detail = record_columns(fields)
    assert cols == {"view": "7", "members": ["A", "B"], "size": 3}
    assert detail == '{"network":1,"t":9,"x":"y"}'  # a Record's network stays in detail
    assert row.network is None
    assert row == make_row("r", "A", 100, 0, "custom", fields)


def test_packet_rows_name_the_network_each_copy_goes_out_on() -> None:
    interp, sink, io = _interp(networks=2)
    size = len(encode_body(Probe(1)))
    interp.apply(
        [
            Send("B", Probe(1)),  # the layer below decides: network 0
            Multicast(Probe(1), EVERY_NETWORK),
            Send("C", Probe(1), 1),
            Send("C", Probe(1), 5),  # a network the node does not have
        ],
        10,
    )
    interp.packet_in("B", Probe(2), 1, 11)
    assert io.out == [("send", "B", (0,)), ("multicast", (0, 1)), ("send", "C", (1,))]
    got = [(r.kind, r.network, r.size, r.detail) for r in _rows(sink)]
    assert got == [
        ("send", 0, size, '{"dst":"B","type":"Probe"}'),
        ("send", 0, size, '{"type":"Probe"}'),
        ("send", 1, size, '{"type":"Probe"}'),
        ("send", 1, size, '{"dst":"C","type":"Probe"}'),
        ("drop", 5, None, '{"network":5,"networks":2,"reason":"unknown network"}'),
        ("recv", 1, size, '{"src":"B","type":"Probe"}'),
    ]


def test_without_packet_tracing_only_the_drop_names_a_network() -> None:
    interp, sink, io = _interp(networks=1, packets=False)
    interp.apply([Send("B", Probe(1)), Multicast(Probe(1), 3), Record("token", {})], 10)
    assert [(r.kind, r.network) for r in _rows(sink)] == [("drop", 3), ("token", None)]
    assert io.out == [("send", "B", (0,))]


def test_the_protocols_drop_records_are_counted_by_the_first_clause_of_their_reason() -> None:
    interp, _, _ = _interp(networks=1, packets=False)
    interp.apply(
        [
            Record.of("drop", reason="invalid Token: seq -1"),
            Record.of("drop", reason="invalid Token: aru 9"),
            Record.of("drop", reason="for_an_earlier_incarnation", src="B"),
            Record.of("drop"),
            Record("token", {}),
        ],
        10,
    )
    assert interp.drops == {
        "invalid Token": 2,
        "for_an_earlier_incarnation": 1,
        "unspecified": 1,
    }
    many = [Record.of("drop", reason=f"reason {k}") for k in range(100)]
    interp.apply(many, 11)
    assert len(interp.drops) == 64 + 1 and interp.drops["other"] == 100 - 61
