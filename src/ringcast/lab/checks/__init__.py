"""The safety properties of the design document, one module a property, as Spark SQL.

Each module has ``NAME``, ``DESCRIPTION``, ``inputs(protocol) -> set[str]`` (the run
tags, any one of which gives the property something to check) and
``violations(ctx, protocols) -> DataFrame`` (one row a counterexample, with the
columns of :data:`~ringcast.lab.checks.context.VIOLATION_COLUMNS`).
:func:`run_checks` applies each to the protocols that claim it
(:mod:`ringcast.lab.properties`).
"""

from __future__ import annotations

from types import ModuleType

from ringcast.lab.checks import (
    convergence,
    delivery_progress,
    fifo,
    integrity,
    leader_agreement,
    merge_atomicity,
    mutual_exclusion,
    safe_delivery,
    single_token,
    total_order,
    view_agreement,
    virtual_synchrony,
)
from ringcast.lab.checks.context import VIOLATION_COLUMNS, CheckContext
from ringcast.lab.checks.runner import PropertyResult, run_checks

CHECKS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        view_agreement,
        total_order,
        integrity,
        fifo,
        virtual_synchrony,
        safe_delivery,
        mutual_exclusion,
        single_token,
        convergence,
        leader_agreement,
        delivery_progress,
        merge_atomicity,
    )
}

__all__ = ["CHECKS", "VIOLATION_COLUMNS", "CheckContext", "PropertyResult", "run_checks"]
