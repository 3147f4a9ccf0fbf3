"""The errors of the Group API: one family, :class:`GroupError`, whose messages name the
node, the address or file at fault and what to do about it.

Each also derives from the built-in exception it refines (``ValueError`` for a bad
cluster or key file, ``OSError`` for an address in use, ``TimeoutError`` for a view
that never came), so code written against those keeps working.
"""

from __future__ import annotations


class GroupError(Exception):
    """Base of every error the Group API raises on its own account."""


class ConfigError(GroupError, ValueError):
    """The cluster file is missing, unreadable or invalid; the message names the key."""


class UnknownNode(ConfigError, LookupError):
    """``Group.join`` (or ``ringcast node --id``) names a node the cluster file lacks."""


class KeyFileError(GroupError, ValueError):
    """The key file is missing, malformed or readable by others."""


class AddressInUse(GroupError, OSError):
    """Another process (often the same node, already running) holds the node's address."""


class JoinTimeout(GroupError, TimeoutError):
    """The node started but installed no view within ``Group.join``'s ``view_timeout``."""


class GroupClosed(GroupError, RuntimeError):
    """The member left the group (``leave`` or the end of its ``async with``)."""


class LockUnavailable(GroupError, RuntimeError):
    """The cluster's protocol offers no mutual exclusion."""
