"""The client's request stream as the router sees it: one `RouteRequest` per request, built on demand.

Sessions (the routing key of consistent_hashing) come from the workload: a multi-turn request's session is the
conversation it continues (`RequestSet.follows`, followed back to the first turn). Traces carry none.
"""

from __future__ import annotations

import numpy as np

from simperf.fleet.route import RouteRequest
from simperf.workload.requests import RequestSet


def sessions_from_follows(follows: np.ndarray | None, n: int) -> np.ndarray | None:
    """The first turn's index for every request of a conversation (follows[k] < k), or None without sessions."""
    if follows is None:
        return None
    session = np.arange(n, dtype=np.int64)
    for k, prev in enumerate(follows.tolist()):
        if prev >= 0:
            session[k] = session[prev]
    return session


class RouteStream:
    def __init__(self, requests: RequestSet) -> None:
        self.requests = requests
        self.n = len(requests)
        self.input_len = requests.input_len.tolist()
        self.output_len = requests.output_len.tolist()
        self.arrival_s = requests.arrival_s.tolist()
        self.block_tokens = int(requests.hash_block_tokens or 0)
        self.hashes = requests.block_hashes
        sessions = sessions_from_follows(requests.follows, self.n)
        self.sessions = None if sessions is None else sessions.tolist()

    def request(self, k: int) -> RouteRequest:
        blocks: tuple[int, ...] = ()
        if self.hashes is not None and self.block_tokens:
            h = self.hashes[k]
            if h is not None:
                blocks = tuple(h[: self.input_len[k] // self.block_tokens].tolist())
        return RouteRequest(
            index=k,
            time_s=self.arrival_s[k],
            input_len=self.input_len[k],
            prompt_blocks=blocks,
            block_tokens=self.block_tokens or 1,
            session=None if self.sessions is None else self.sessions[k],
        )

    def block_hashes(self, k: int):
        return None if self.hashes is None else self.hashes[k]
