"""What ``ringcast status`` says of each node: its status, or in words what is wrong.

Every node with a ``status`` address is asked at once (one short timeout for all, so
the answer comes within about a second however many nodes are down). A node is *up*
when its endpoint answers as that node of this cluster with this cluster's key;
otherwise the row says why not:

- ``not running``: nothing listens on its status address (connection refused);
- ``not answering``: the address takes no connection or gives no answer within the
  timeout (the process is stopped, overloaded, or a firewall drops the packets);
- ``wrong key``: the node runs with another key than the cluster file's ``key_file``
  (compared by the key's public fingerprint, :func:`~ringcast.runtime.security.key_id`);
- ``other cluster`` / ``other node``: something of ringcast answers there, but as
  another cluster's node or another node (two cluster files sharing addresses);
- ``bad answer``: something answers that is not a ringcast status endpoint.

A node without a status address (an application's member, as ``cluster up
--app-members`` writes them) is reported ``not monitored`` and not counted as down.
"""

from __future__ import annotations

import asyncio
import errno
import json
from typing import Any

from ringcast.runtime.config import ClusterConfig, NodeConfig
from ringcast.runtime.security import KeyFileError, key_id, read_key_file

NOT_MONITORED = "not monitored"
DOWN = ("not running", "not answering", "wrong key", "other cluster", "other node", "bad answer")


def _row(node: NodeConfig, error: str, problem: str) -> dict[str, Any]:
    return {"node": node.node_id, "error": error, "problem": problem}


def diagnose(
    node: NodeConfig, cfg: ClusterConfig, answer: dict[str, Any], want_key: str | None
) -> dict[str, Any]:
    """The row of a node whose endpoint answered ``answer``: the status itself when it
    is this cluster's node with this key, else what is wrong."""
    assert node.status is not None
    where = "{}:{}".format(*node.status)
    if not isinstance(answer, dict) or "node" not in answer or "metrics" not in answer:
        return _row(node, "bad answer", f"{where} answers, but not as a ringcast node")
    if answer.get("cluster") != cfg.name:
        return _row(
            node,
            "other cluster",
            f"{where} answers as a node of cluster {answer.get('cluster')!r}, not {cfg.name!r}",
        )
    if answer["node"] != node.node_id:
        return _row(node, "other node", f"{where} answers as node {answer['node']!r}")
    got = answer.get("key_id")
    if want_key is not None and got is not None and got != want_key:
        return _row(
            node,
            "wrong key",
            f"runs with another key than {cfg.key_file} (copy that file to it and restart it)",
        )
    return answer


async def probe(
    node: NodeConfig, cfg: ClusterConfig, want_key: str | None, timeout: float
) -> dict[str, Any]:
    """One node's row (see the module's docstring)."""
    from ringcast.runtime.status import fetch_status

    if node.status is None:
        return _row(node, NOT_MONITORED, "no status address in the cluster file")
    where = "{}:{}".format(*node.status)
    try:
        body = await fetch_status(node.status, timeout=timeout)
    except TimeoutError:
        return _row(node, "not answering", f"no answer from {where} within {timeout:g} s")
    except ConnectionRefusedError:
        return _row(node, "not running", f"nothing listens on {where}")
    except ConnectionError as e:
        return _row(node, "bad answer", str(e))
    except OSError as e:
        if e.errno == errno.ECONNREFUSED:
            return _row(node, "not running", f"nothing listens on {where}")
        return _row(node, "not answering", f"{where}: {e.strerror or e}")
    try:
        answer = json.loads(body)
    except ValueError:
        return _row(node, "bad answer", f"{where} answers, but not with JSON")
    return diagnose(node, cfg, answer, want_key)


async def cluster_health(cfg: ClusterConfig, timeout: float = 1.0) -> list[dict[str, Any]]:
    """Every node's row, the nodes asked concurrently, in the cluster file's order."""
    try:
        want_key: str | None = key_id(read_key_file(cfg.key_file))
    except KeyFileError:
        want_key = None  # no key here to compare with: the key is not judged
    return list(await asyncio.gather(*(probe(n, cfg, want_key, timeout) for n in cfg.nodes)))


def is_down(row: dict[str, Any]) -> bool:
    return row.get("error") in DOWN
