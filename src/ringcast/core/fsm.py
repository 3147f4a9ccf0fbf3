"""One state-machine convention for every protocol family.

A protocol whose seed has a state diagram writes it down as a :class:`TransitionTable`:
for each ``(state, event)`` pair the *action* the machine runs (a method name) and every
state that action may end in. The machine then

1. looks the pair up with :meth:`TransitionTable.lookup`; a pair the table does not
   list is an event the protocol does not expect in that state: the machine drops it
   and returns :func:`unlisted` (a ``drop`` trace row), its state unchanged;
2. runs the action;
3. checks where it landed with :meth:`TransitionTable.check`; a state the table does not
   list for that pair is a bug of the machine, never of the peer: it is recorded as an
   ``invariant`` trace row (which the lab reports) and the machine carries on. A
   machine never raises out of ``handle()`` because of a packet.

:meth:`TransitionTable.mermaid` renders the table as the Mermaid ``stateDiagram-v2``
embedded in the protocol's page under ``docs/protocols/``; the page's test compares
the block with the rendering, so the diagram cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ringcast.core.effects import Record

S = TypeVar("S", bound=Hashable)
E = TypeVar("E", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Transition(Generic[S]):
    """What a ``(state, event)`` pair does: run ``action``; end in one of ``targets``."""

    action: str
    targets: tuple[S, ...]


IGNORE = "ignore"
"""The conventional action name of a pair that is listed but does nothing (a stale
timer of a state the node has left); not drawn in diagrams."""


def _label(x: object) -> str:
    value = getattr(x, "value", x)
    return str(value)


class TransitionTable(Generic[S, E]):
    """An explicit transition table: ``(state, event) -> Transition``.

    ``states`` and ``events`` give the order in which they are drawn and listed;
    ``initial`` the states a node boots in (drawn as ``[*] --> state``); ``label``
    names a state in diagrams and trace rows and ``event_label`` an event.
    """

    def __init__(
        self,
        name: str,
        rows: Mapping[tuple[S, E], Transition[S]],
        *,
        states: Iterable[S],
        events: Iterable[E],
        initial: Iterable[tuple[S, str]] = (),
        label: Callable[[S], str] = _label,
        event_label: Callable[[E], str] = _label,
    ):
        self.name = name
        self.rows: dict[tuple[S, E], Transition[S]] = dict(rows)
        self.states: tuple[S, ...] = tuple(states)
        self.events: tuple[E, ...] = tuple(events)
        self.initial: tuple[tuple[S, str], ...] = tuple(initial)
        self.label = label
        self.event_label = event_label
        known = set(self.states)
        for (state, event), tr in self.rows.items():
            if state not in known:
                raise ValueError(f"{name}: row for unknown state {state!r}")
            if event not in self.events:
                raise ValueError(f"{name}: row for unknown event {event!r}")
            for target in tr.targets:
                if target not in known:
                    raise ValueError(f"{name}: {state!r} on {event!r} targets unknown {target!r}")
        self._by_state: dict[S, dict[E, Transition[S]]] = {s: {} for s in self.states}
        for (state, event), tr in self.rows.items():
            self._by_state[state][event] = tr

    def lookup(self, state: S, event: E) -> Transition[S] | None:
        """The transition listed for ``(state, event)``, or None if the table has none."""
        return self.rows.get((state, event))

    def row(self, state: S) -> dict[E, Transition[S]]:
        """Every event ``state`` lists, with its transition (one dict per state, cached)."""
        return self._by_state[state]

    def check(self, before: S, event: E, after: S) -> Record | None:
        """None if ``after`` is a listed target of ``(before, event)``; otherwise the
        ``invariant`` trace row that reports the machine's own bug (it carries on)."""
        tr = self.rows.get((before, event))
        if tr is not None and (after in tr.targets or (after == before and tr.action == IGNORE)):
            return None
        return Record.of(
            "invariant",
            error="transition not in table",
            table=self.name,
            event=self.event_label(event),
            before=self.label(before),
            after=self.label(after),
        )

    def unlisted(self, state: S, event: E, **fields: object) -> Record:
        """The ``drop`` row for an event the table does not list in ``state``."""
        return Record.of(
            "drop",
            reason=f"{self.event_label(event)} in {self.label(state)}",
            **fields,
        )

    def mermaid(self, *, self_loops: bool = True, fenced: bool = False) -> str:
        """The table as a Mermaid ``stateDiagram-v2``.

        One edge per ``(state, target)`` pair, labelled with the events that lead
        there; ``ignore`` rows are not drawn, nor a state's edges to itself unless
        ``self_loops``. ``fenced`` wraps the diagram in a Markdown code fence.
        """
        lines = ["stateDiagram-v2"]
        for state, why in self.initial:
            lines.append(f"    [*] --> {self.label(state)}: {why}")
        edges: dict[tuple[S, S], list[str]] = {}
        for state in self.states:
            for event in self.events:
                tr = self.rows.get((state, event))
                if tr is None or tr.action == IGNORE:
                    continue
                for target in tr.targets:
                    if target == state and not self_loops:
                        continue
                    labels = edges.setdefault((state, target), [])
                    name = self.event_label(event)
                    if name not in labels:
                        labels.append(name)
        for (src, dst), labels in edges.items():
            lines.append(f"    {self.label(src)} --> {self.label(dst)}: {', '.join(labels)}")
        body = "\n".join(lines) + "\n"
        return f"```mermaid\n{body}```\n" if fenced else body


def unlisted(state: str, event: str, **fields: object) -> Record:
    """A ``drop`` row for a machine without a table (an event it does not expect)."""
    return Record.of("drop", reason=f"{event} in {state}", **fields)
