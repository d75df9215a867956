"""Rules SGLang applies across the two sides of PD disaggregation (a prefill server shipping KV to a decode server).

Each side is resolved alone (simperf.scenario.resolve); what must agree between them is checked here, on the
resolved servers, so that a value SGLang's default rules chose counts the same as one the user gave.
"""

from __future__ import annotations

from collections.abc import Sequence

from simperf.scenario.resolved import ResolvedServing

# (where its arguments sit in the scenario file, e.g. disaggregation.prefill, the server as resolved)
Side = tuple[str, ResolvedServing]

# SGLang 0.5.17 srt/disaggregation/common/conn.py, CommonKVManager.try_ensure_parallel_info: the decode server
# compares these with the prefill server's when they connect and raises ("Both servers must use the same ...")
KV_MUST_MATCH = (("page_size", "page_size"), ("kv_cache_dtype", "kv_dtype"))


def check_kv_compatible(prefill: Sequence[Side], decode: Sequence[Side]) -> None:
    """Every decode server must take every prefill server's KV pages as they are: the same page size and KV cache
    dtype. SGLang's decode server refuses the connection otherwise (no request is served); simperf priced each
    side at its own page size and dtype."""
    for p_field, p in prefill:
        for d_field, d in decode:
            for name, attribute in KV_MUST_MATCH:
                ours, theirs = getattr(d, attribute), getattr(p, attribute)
                if ours != theirs:
                    raise ValueError(
                        f"{d_field}.{name}: the decode server runs {ours} and the prefill server "
                        f"({p_field}) {theirs}; SGLang's decode server refuses a prefill server with another "
                        f"{name} (disaggregation/common/conn.py, CommonKVManager.try_ensure_parallel_info: both "
                        f"servers must use the same --{name.replace('_', '-')}); give both sides the same {name}"
                    )
