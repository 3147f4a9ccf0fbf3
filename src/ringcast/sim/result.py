"""The outcome of one simulated run: its trace, summary and final machines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from ringcast.core.machine import Machine
    from ringcast.sim.recorder import Recorder
    from ringcast.sim.scenario import Scenario


@dataclass
class SimResult:
    scenario: Scenario
    seed: int
    run_id: str
    recorder: Recorder
    machines: dict[str, Machine]
    summary: dict[str, Any]

    def events(self, kind: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
        """Trace rows as dicts (``detail`` parsed), optionally filtered by kind and node."""
        cols = self.recorder.cols
        names = list(cols)
        out = []
        kinds, nodes = cols["kind"], cols["node"]
        for idx in range(len(kinds)):
            if (kind is None or kinds[idx] == kind) and (node is None or nodes[idx] == node):
                row = {c: cols[c][idx] for c in names}
                row["detail"] = json.loads(row["detail"]) if row["detail"] else {}
                out.append(row)
        return out

    def table(self) -> pa.Table:
        """The trace as an Arrow table in the schema of ``docs/trace-schema.md``."""
        from ringcast.trace.convert import rows_to_table

        return rows_to_table(self.recorder.rows, self.run_id)

    def write(self, out_dir: str | Path, fmt: str = "parquet") -> Path:
        """Write ``trace.parquet`` (or ``trace.jsonl``) and ``summary.json`` under ``out_dir``."""
        from ringcast.trace.writer import open_writer

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / ("trace.parquet" if fmt == "parquet" else "trace.jsonl")
        with open_writer(path, fmt, protocol=self.scenario.protocol) as w:
            for batch in self.table().to_batches():
                w.write_batch(batch)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        return path
