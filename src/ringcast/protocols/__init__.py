"""Protocol families. Each registers itself in :mod:`ringcast.protocols.registry`."""
