"""Leaving (JGRP-136): a coordinator casts the view without itself and, in ``acks``
and ``two_phase``, stays until it is installed; a participant resends LEAVE until a
view without it arrives."""

from __future__ import annotations

from typing import Any

from ringcast.core.effects import (
    Effect,
    Send,
    SetTimer,
)
from ringcast.protocols.gms import _messages as M
from ringcast.protocols.gms._common import (
    TIMER_OF,
    GmsFields,
)
from ringcast.protocols.gms._state import Ev, St
from ringcast.protocols.gms._views import parse_view


class LeaveMixin(GmsFields):
    """The GMS machine's steps: leaving."""

    # ------------------------------------------------------------ leaving

    def _leave(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        view = self.view
        assert view is not None
        if self._am_coord() or view.members[0] == self.node_id:
            base = self.install.view if self.install is not None else view
            members = [m for m in base.members if m != self.node_id]
            self.install = None
            if not members:
                self.state = St.LEFT
                return out
            self.state = St.COORDINATOR
            self._cast(members, out, why=f"leave {self.node_id}")
            return out
        self.state = St.LEAVING
        out.append(Send(view.members[0], M.Leave()))
        out.append(SetTimer(TIMER_OF[Ev.LEAVE_TIMER], self.rto))
        return out

    def _leave_tick(self, now: int, src: str, arg: Any) -> list[Effect]:
        out: list[Effect] = []
        view = self.view
        if view is None or self.install is not None:
            return out
        coord = next((m for m in view.members if m not in self.suspects), None)
        if coord is None or coord == self.node_id:
            self.state = St.LEFT
            return out
        out.append(Send(coord, M.Leave()))
        out.append(SetTimer(TIMER_OF[Ev.LEAVE_TIMER], self.rto))
        return out

    def _leaver_view(self, now: int, src: str, msg: Any) -> list[Effect]:
        out: list[Effect] = []
        v = parse_view(msg.view_id, msg.members)
        if type(msg) is M.ViewMsg:
            out.append(Send(src, M.ViewAck(v.view_id)))
        if self.install is not None:
            return out  # a leaving coordinator finishes its own installation first
        if self.node_id not in v:
            self.state = St.LEFT
            return out
        if self.view is not None and v.key > self.view.key:
            # Still a member of a newer view: leave that one (its coordinator may be us).
            self._install(v, out)
            out += self._leave(self.now, "", None)
        return out

    def _leaver_prepare(self, now: int, src: str, msg: M.PrepareView) -> list[Effect]:
        out: list[Effect] = []
        v = parse_view(msg.view_id, msg.members)
        out.append(Send(src, M.ViewAck(v.view_id)))
        return out

    def _leaver_suspect(self, now: int, src: str, msg: M.Suspect) -> list[Effect]:
        out: list[Effect] = []
        if self.install is not None:
            self._suspect(msg.node, out)
        return out
