"""Flow control (seed 002, "Flow Control Mechanism").

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
