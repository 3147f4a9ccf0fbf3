"""Flow control (the Totem paper, "Flow Control Mechanism").

On each visit of the token a node may broadcast at most:

- ``max_messages`` frames (the per-visit limit);
- ``window_size`` minus the frames the others broadcast during the last rotation (the token's
  ``fcc`` less this node's own count from its previous visit);
- its fair share, ``my_trc <= window_size * my_tbl / (backlog + my_tbl - my_pbl)``, where
  ``backlog`` is the token's sum of the backlogs the members left as they released it,
  ``my_pbl`` this node's part of that sum and ``my_tbl`` its backlog now;
- and, a ringcast bound (see the docs), no frame beyond ``aru + 2 * window_size``, so a
  member that lags cannot make the others' retransmission buffers grow without limit.

The fair share is rounded down but never below one frame, so a tiny backlog is not starved.

``fcc`` and ``backlog`` are running sums: each member takes its previous part out and puts
its new one in, so a value that is wrong once (a corrupted token) stays wrong for the
ring's life. :func:`observed_fcc` checks ``fcc`` against what this node saw.
"""

from __future__ import annotations


def allowance(
    *,
    window_size: int,
    max_messages: int,
    fcc: int,
    my_prev_trc: int,
    backlog: int,
    my_pbl: int,
    my_tbl: int,
    seq: int,
    aru: int,
) -> int:
    """How many new frames this node may broadcast on this visit of the token."""
    if my_tbl <= 0:
        return 0
    room = window_size - max(fcc - my_prev_trc, 0)
    others = max(backlog - my_pbl, 0)
    share = max(window_size * my_tbl // (others + my_tbl), 1)
    unstable = aru + 2 * window_size - seq
    return max(min(max_messages, room, share, unstable, my_tbl), 0)


def observed_fcc(*, fcc: int, my_prev_trc: int, seq: int, last_seq: int) -> int:
    """The token's ``fcc`` as far as this node's own view bears it out.

    ``last_seq`` is the token's seq when this node last passed it on the same ring (above
    ``seq`` when unknown). ``seq - last_seq`` new frames were broadcast by the others
    since; an honest ``fcc`` counts exactly those (retransmissions are not counted) and
    this node's own from its previous visit, so a larger one is cut back to that. On an
    honest token this changes nothing; on a corrupted one it stops a ring whose token
    says the window is full from never broadcasting again (``docs/protocols/totem.md``,
    "Flow control that heals").
    """
    if seq >= last_seq and fcc - my_prev_trc > seq - last_seq:
        return my_prev_trc + seq - last_seq
    return fcc
