"""Errors raised by the lab, mapped by the command line to exit code 2."""

from __future__ import annotations


class LabError(Exception):
    """Bad input or environment for the lab (missing Java, unreadable trace, bad sweep)."""
