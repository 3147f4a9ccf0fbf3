"""Property: any rows of the schema come back unchanged from both formats."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringcast.trace import Row, open_writer, read_trace

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_maybe_text = st.none() | _text
_int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)

_rows = st.lists(
    st.builds(
        Row,
        run=_text,
        node=_text,
        t=_int64,
        i=_int64,
        kind=_text,
        msg=_maybe_text,
        order=_maybe_text,
        view=_maybe_text,
        members=st.none() | st.lists(_text, max_size=4),
        transitional=st.none() | st.booleans(),
        size=st.none() | st.integers(min_value=-(2**31), max_value=2**31 - 1),
        detail=_maybe_text,
        network=st.none() | st.integers(min_value=-(2**31), max_value=2**31 - 1),
    ),
    max_size=20,
)


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rows=_rows)
def test_rows_round_trip_through_both_formats(rows):
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("parquet", "jsonl"):
            path = Path(tmp) / f"trace.{fmt}"
            with open_writer(path, fmt) as writer:
                writer.write(rows)
            back = [Row(**record) for record in read_trace(path).to_pylist()]
            assert back == rows, fmt
