"""``gms``: JGroups-style group membership with reliable view installation.

JGroups JGRP-136 ("Reliable view installation"): a coordinator-based group
membership (JGroups' GMS) whose views are installed in one of three ways, the setting
``view_install``: ``plain`` (a view is a message: JGRP-136's cases A-D fail), ``acks``
(JGRP-136's solutions 1 and 2) and ``two_phase`` (PREPARE_VIEW / COMMIT_VIEW /
STATUS_VIEW, which JGroups designed and never built; the default). Partitions merge
as in JGroups' MERGE3. Application messages are reliable per-sender FIFO multicasts
(NAKACK2 and STABLE), delivered in the view they were sent in. See
``docs/protocols/gms.md``.
"""

from ringcast.core.machine import Machine, MachineContext
from ringcast.core.units import MS
from ringcast.layers import HeartbeatDetector, Stack, detector
from ringcast.protocols.gms._state import render_mermaid
from ringcast.protocols.gms.machine import MODES, GmsMachine
from ringcast.protocols.registry import ProtocolSpec, Setting, register


def make_gms(ctx: MachineContext) -> Machine:
    s = SPEC.resolve_settings(ctx.settings, "settings")
    return Stack(
        GmsMachine(ctx, s),
        detector=HeartbeatDetector.from_settings(ctx.node_id, ctx.peers, s),
    )


SPEC = register(
    ProtocolSpec(
        "gms",
        make_gms,
        settings={
            "view_install": Setting(
                "str", "two_phase", "view installation: plain, acks or two_phase"
            ),
            **detector.SETTINGS,
            "suspect_interval": Setting(
                "duration", 100 * MS, "SUSPECT re-multicast period (FD)", minimum=1
            ),
            "rto": Setting(
                "duration", 20 * MS, "retransmission of views, JOIN, LEAVE and NAKs", minimum=1
            ),
            "view_ack_collection_timeout": Setting(
                "duration", 500 * MS, "how long a coordinator waits for VIEW_ACKs", minimum=1
            ),
            "status_timeout": Setting(
                "duration",
                100 * MS,
                "PREPARE_VIEW without COMMIT_VIEW before STATUS_VIEW",
                minimum=1,
            ),
            "join_timeout": Setting("duration", 200 * MS, "JOIN without JoinRsp", minimum=1),
            "discovery_timeout": Setting(
                "duration", 30 * MS, "how long a joiner collects FIND_MBRS answers", minimum=1
            ),
            "merge_interval": Setting(
                "duration", 500 * MS, "MERGE3 INFO period and merge check (discovery)", minimum=1
            ),
            "direct_info": Setting(
                "bool",
                True,
                "a coordinator sends its INFO straight to each node outside its view that "
                "it hears alive and whose INFO it lacks, and to a smaller coordinator it "
                "defers to, every suspect_interval (false: MERGE3's INFO every "
                "merge_interval only)",
            ),
            "stable_interval": Setting("duration", 100 * MS, "STABLE digest period", minimum=1),
            "window": Setting(
                "int",
                256,
                "messages a member may multicast in its view beyond what every other "
                "member said it delivered, before Backpressure (MFC's credits)",
                minimum=2,
            ),
            "commit_delay": Setting(
                "duration",
                0,
                "test hook: two_phase pause between the last VIEW_ACK and COMMIT_VIEW",
            ),
            "inject_views": Setting(
                "str",
                "",
                "test hook: boot views, 'A@B:5=B,A,C; B@C:5=C,A,B' (JGroups' injectView)",
            ),
        },
        doc=__doc__ or "",
        claims=frozenset(
            {
                "view_agreement",
                "leader_agreement",
                "convergence",
                "integrity",
                "fifo",
                "merge_atomicity",
                "delivery_progress",
            }
        ),
        total_orders=None,
        order_scope="view",
        converge_on="view",
        trace_kinds=(
            "join_attempt",
            "join",
            "previous_incarnation",
            "restarted",
            "join_retry",
            "join_wait",
            "join_rejected",
            "stale_join",
            "singleton",
            "cast_view",
            "ack_timeout",
            "left",
            "suspect",
            "ignored_suspect",
            "resend_view",
            "takeover",
            "recommit",
            "excluded",
            "status_answered",
            "status_view",
            "commit_from_info",
            "digest_view",
            "merge_start",
            "merge",
            "merge_cancelled",
            "refused_view",
            "older_view",
            "skipped",
        ),
        wire_ids=(0x0400, 0x04FF),
        # FD suspects a member after heartbeat_misses silent heartbeat periods
        timeout=detector.suspicion_time,
    )
)

__all__ = ["MODES", "SPEC", "GmsMachine", "make_gms", "render_mermaid"]
