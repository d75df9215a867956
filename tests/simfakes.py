"""Small, fully known stand-ins for the cost model and resolved settings, so simulator tests check the scheduler."""

from __future__ import annotations

import numpy as np

from simperf.perfdb.schema import SOURCES
from simperf.scenario.models import Overheads
from simperf.scenario.resolved import ParallelLayout, ResolvedServing

# every host-side cost off, so a test's times are the cost model's alone
NO_OVERHEADS = Overheads(
    frontend_us_per_chunk=0,
    frontend_us_per_streamed_token=0,
    scheduler_us_per_iteration=0,
    process_us_per_iteration=0,
    process_us_per_running_request=0,
    cuda_graph_replay_us=0,
    eager_launch_us_per_kernel=0,
    ingress_us=0,
    receive_us_per_request=0,
    client_setup_us_per_request=0,
    client_burst_us_per_request=0,
    egress_us=0,
)


class LinearCost:
    """Step time = base + per_token·tokens (+ per_kv·KV tokens read): simple enough to check by hand."""

    def __init__(self, base_us: float = 1000.0, per_token_us: float = 10.0, per_kv_us: float = 0.0) -> None:
        self.base_us = base_us
        self.per_token_us = per_token_us
        self.per_kv_us = per_kv_us
        self.extend_calls: list[tuple[list[int], list[int]]] = []

    def _row(self, us):
        out = np.zeros((np.size(us), len(SOURCES)))
        out[:, 0] = us
        return out

    def extend_step(
        self, extend_lens, prefix_lens, decode_kv_lens=None, gathered_rows=None, gathered_logit_rows=None
    ):
        self.extend_calls.append((list(extend_lens), list(prefix_lens)))
        tokens = int(np.sum(extend_lens)) + (0 if decode_kv_lens is None else len(decode_kv_lens))
        return self._row(self.base_us + self.per_token_us * tokens)[0]

    def decode_steps(self, bs, padded_bs, kv_total, graph, shared_kv=0.0):
        us = self.base_us + self.per_token_us * padded_bs + self.per_kv_us * np.asarray(kv_total, dtype=float)
        return self._row(us)


def make_serving(**overrides) -> ResolvedServing:
    fields = dict(
        layout=ParallelLayout(1, 1, 1),
        gpu="h100",
        weight_dtype="bf16",
        kv_dtype="bf16",
        page_size=1,
        prefill_backend="fa3",
        decode_backend="fa3",
        chunked_prefill_size=8192,
        max_prefill_tokens=16384,
        max_running_requests=256,
        max_total_tokens=200_000,
        cuda_graph_max_bs=256,
        cuda_graph_bs=(1, 2, 4, 8, 12, 16, 24, 32, 64, 128, 256),
        overlap_schedule=True,
        enable_mixed_chunk=False,
        schedule_policy="fcfs",
        init_new_token_ratio=0.7,
        min_new_token_ratio=0.098,
        new_token_ratio_decay=(0.7 - 0.098) / 600,
        context_len=131072,
        speculative=None,
        sglang_version="0.5.23",
    )
    fields.update(overrides)
    return ResolvedServing(**fields)
