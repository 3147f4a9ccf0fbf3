"""The explicit transition table (the Raincore paper, Figures 9-11) and its rendering in the
docs."""

from __future__ import annotations

from pathlib import Path

from ringcast.protocols.raincore._state import (
    ON_TOKEN,
    STATES,
    TABLE,
    Action,
    Ev,
    TokenState,
    ViewState,
    mermaid,
)
from ringcast.protocols.raincore.machine import RaincoreMachine

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocols" / "raincore.md"


def test_seven_reachable_states_and_eight_events() -> None:
    assert len(STATES) == 7 == len(set(STATES))
    assert len(Ev) == 8
    unreachable = {
        (TokenState.STARVING, ViewState.AGREEMENT),
        (TokenState.STARVING, ViewState.RESERVE),
    }
    assert set(STATES) | unreachable == {(t, v) for t in TokenState for v in ViewState}
    for state in STATES:
        assert set(TABLE.row(state)) == set(Ev)


def test_every_target_is_a_reachable_state_and_every_action_is_implemented() -> None:
    for state in STATES:
        for tr in TABLE.row(state).values():
            assert tr.targets and set(tr.targets) <= set(STATES)
    for action in Action:
        assert callable(getattr(RaincoreMachine, "_" + action.value))


def test_figure_9_view_rules() -> None:
    # Never Chaos -> Agreement, never Agreement -> Reserve (Figure 9).
    assert all(
        not (v == ViewState.CHAOS and to == ViewState.AGREEMENT)
        and not (v == ViewState.AGREEMENT and to == ViewState.RESERVE)
        for (v, _), (to, _) in ON_TOKEN.items()
    )
    # "The normal view state transition can only occur in Eating token state."
    for state in STATES:
        tr = TABLE.row(state)[Ev.TOKEN_RECEIVED]
        assert all(t[0] in (TokenState.EATING, state[0]) for t in tr.targets)


def test_starving_implies_chaos_in_the_table() -> None:
    for state in STATES:
        for tr in TABLE.row(state).values():
            for token, view in tr.targets:
                assert token is not TokenState.STARVING or view is ViewState.CHAOS


def test_doc_contains_exactly_the_rendered_diagram() -> None:
    text = DOC.read_text()
    rendered = mermaid()
    assert rendered in text
    start = text.index("```mermaid")
    end = text.index("```", start + 3) + 3
    assert text[start:end] + "\n" == rendered
    assert text.count("```mermaid") == 1


def test_the_machine_dispatches_on_the_core_fsm_table() -> None:
    from ringcast.core.fsm import TransitionTable
    from ringcast.protocols.raincore._state import INITIAL_STATES

    assert isinstance(TABLE, TransitionTable)
    for state in STATES:
        for event, tr in TABLE.row(state).items():
            assert TABLE.lookup(state, event) is tr
    # Every boot state is a self-loop of Initialization: the diagram draws it as [*].
    for state in INITIAL_STATES:
        assert TABLE.lookup(state, Ev.INITIALIZATION).targets == (state,)
    # A landing outside the table is an invariant row naming the table, never an error.
    bad = TABLE.check(STATES[0], Ev.TOKEN_RECEIVED, STATES[-1])
    assert bad is not None and bad.kind == "invariant" and bad.fields["table"] == "raincore"
