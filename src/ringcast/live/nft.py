"""nftables rulesets loaded in-process, one thread a network namespace.

Starting an ``nft`` process in a namespace for each fault costs tens of milliseconds on a
busy machine, and that is how late a partition would take effect. Instead each namespace
gets a thread of the driver that moves itself into the namespace (``setns``, which for a
network namespace moves only the calling thread) and loads rulesets there through
libnftables, nftables' own library (the ``nft`` command is a front end to it): a ruleset
is one ``nft_run_cmd_from_buffer``, one netlink transaction, well under a millisecond.

Where libnftables cannot be loaded, :func:`nft_loader` falls back to an ``nft`` process a
namespace (:func:`ringcast.live.netns.apply_nft`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ringcast.live.netns import NetnsUnavailable, apply_nft

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"


class NftLoader(Protocol):
    def apply(self, rulesets: dict[str, str], clock: Callable[[], int]) -> dict[str, int]:
        """Load each namespace's ruleset (all at once); ``clock()`` when each holds."""
        ...

    def close(self) -> None: ...


class _Processes:
    """An ``nft`` process a namespace and a ruleset."""

    def apply(self, rulesets: dict[str, str], clock: Callable[[], int]) -> dict[str, int]:
        return apply_nft(rulesets, clock)

    def close(self) -> None:
        pass


def _library() -> Any:
    name = ctypes.util.find_library("nftables") or "libnftables.so.1"
    lib = ctypes.CDLL(name)
    lib.nft_ctx_new.restype = ctypes.c_void_p
    lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
    lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
    lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
    lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
    lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
    lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
    return lib


class _Threads:
    """One thread a namespace, inside it, loading rulesets through libnftables."""

    def __init__(self, namespaces: Sequence[str]):
        self._lib = _library()
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._queues: dict[str, queue.Queue[Any]] = {}
        self._threads: list[threading.Thread] = []
        ready: queue.Queue[str | None] = queue.Queue()
        for ns in namespaces:
            q: queue.Queue[Any] = queue.Queue()
            t = threading.Thread(target=self._serve, args=(ns, q, ready), daemon=True)
            t.start()
            self._queues[ns] = q
            self._threads.append(t)
        errors = [e for e in (ready.get() for _ in namespaces) if e is not None]
        if errors:
            self.close()
            raise NetnsUnavailable(errors[0])

    def _serve(self, ns: str, q: queue.Queue[Any], ready: queue.Queue[str | None]) -> None:
        lib = self._lib
        try:
            fd = os.open(os.path.join(NETNS_DIR, ns), os.O_RDONLY)
        except OSError as e:
            ready.put(f"namespace {ns}: {e.strerror}")
            return
        try:
            if self._libc.setns(fd, CLONE_NEWNET) != 0:
                ready.put(f"setns into {ns}: {os.strerror(ctypes.get_errno())}")
                return
        finally:
            os.close(fd)
        ctx = lib.nft_ctx_new(0)
        lib.nft_ctx_buffer_error(ctx)
        lib.nft_ctx_buffer_output(ctx)
        ready.put(None)
        try:
            while True:
                item = q.get()
                if item is None:
                    return
                text, clock, reply = item
                rc = lib.nft_run_cmd_from_buffer(ctx, text.encode())
                at = clock()
                err = (lib.nft_ctx_get_error_buffer(ctx) or b"").decode().strip()
                reply.put((ns, rc, at, err))
        finally:
            lib.nft_ctx_free(ctx)

    def apply(self, rulesets: dict[str, str], clock: Callable[[], int]) -> dict[str, int]:
        reply: queue.Queue[tuple[str, int, int, str]] = queue.Queue()
        for ns, text in rulesets.items():
            self._queues[ns].put((text, clock, reply))
        held = {}
        failed = None
        for _ in rulesets:
            ns, rc, at, err = reply.get(timeout=30)
            held[ns] = at
            if rc != 0 and failed is None:
                failed = f"nft in {ns}: {err or f'error {rc}'}"
        if failed is not None:
            raise NetnsUnavailable(failed)
        return held

    def close(self) -> None:
        """End the threads (each leaves its namespace with it)."""
        for q in self._queues.values():
            q.put(None)
        for t in self._threads:
            t.join(10)


def nft_loader(namespaces: Sequence[str]) -> NftLoader:
    """Threads in ``namespaces`` loading through libnftables, or ``nft`` processes where
    the library cannot be had."""
    try:
        return _Threads(namespaces)
    except OSError:  # no libnftables here
        return _Processes()
