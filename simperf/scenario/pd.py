"""Rules SGLang applies to the two sides of PD disaggregation (a prefill server shipping KV to a decode server).

Each side is resolved alone (simperf.scenario.resolve); what must agree between them is checked here, on the
resolved servers, so that a value SGLang's default rules chose counts the same as one the user gave. So are the
server arguments one side never reads, on the arguments as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from simperf.scenario.resolved import ResolvedServing

if TYPE_CHECKING:
    from simperf.scenario.models import ServingSpec

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
            _check_speculative_pair(p_field, p, d_field, d)


def _check_speculative_pair(p_field: str, p: ResolvedServing, d_field: str, d: ResolvedServing) -> None:
    """Speculative decoding in PD runs on both servers or neither (SGLang 0.5.17 srt/disaggregation/prefill.py,
    process_batch_result_disagg_prefill: a speculating prefill server runs the draft's first step and ships its
    top-k and hidden states with the KV; a speculating decode server starts its drafts from them, zeros where none
    were shipped). One side alone was priced as asked: a decode server's drafts accepted at the full accept_length
    with nothing to start from, or a prefill server's draft step paid for and never read."""
    ours = d.speculative.algorithm if d.speculative else None
    theirs = p.speculative.algorithm if p.speculative else None
    if ours == theirs:
        return
    if theirs is None or ours is None:
        field, side, other_field = (
            (d_field, "decode", p_field) if theirs is None else (p_field, "prefill", d_field)
        )
        raise ValueError(
            f"{field}.speculative: only the {side} server speculates ({ours or theirs}), not the "
            f"{'prefill' if side == 'decode' else 'decode'} server ({other_field}); in PD the prefill server runs "
            "the draft's first step and ships its top-k and hidden states with the KV, which the decode server's "
            "drafts start from (SGLang disaggregation/prefill.py); give both sides the same speculative algorithm, "
            "or neither"
        )
    raise ValueError(
        f"{d_field}.speculative.algorithm: the decode server drafts with {ours} and the prefill server "
        f"({p_field}) with {theirs}; the decode server's drafts start from the prefill server's shipped draft "
        "state (SGLang disaggregation/prefill.py); give both sides the same speculative algorithm"
    )


# server arguments a PD decode server never reads, and why (SGLang 0.5.17): its requests arrive with their KV, as
# prebuilt batches (srt/disaggregation/decode.py, get_next_disagg_decode_batch_to_run), so it runs no prefill
DECODE_UNREAD = {
    "enable_mixed_chunk": "there is no prefill chunk to mix decode rows into: its batches are prebuilt from the "
    "shipped KV and decode steps (disaggregation/decode.py, get_next_disagg_decode_batch_to_run)",
    "chunked_prefill_size": "it budgets prefill batches, which a decode server does not run (its requests arrive "
    "with their KV; server_args.py sizes a decode server's activation reserve by its running requests instead)",
    "max_prefill_tokens": "it budgets prefill batches, which a decode server does not run (its requests arrive "
    "with their KV)",
    "schedule_policy": "a decode server admits requests as their KV lands and orders its queue by the policy only "
    "under --enable-priority-scheduling (disaggregation/decode.py, get_new_prebuilt_batch)",
    "disable_radix_cache": "SGLang turns a decode server's radix cache off itself (server_args.py: \"KV cache is "
    "forced as chunk cache for decode server\"): the prefix cache is the prefill server's",
}


def check_decode_settings(serving: ServingSpec, field: str) -> None:
    """A PD decode server's own arguments that SGLang does not read there (DECODE_UNREAD): each was accepted, and
    enable_mixed_chunk and chunked_prefill_size even changed simperf's decode prediction."""
    for name, why in DECODE_UNREAD.items():
        if name in serving.model_fields_set:
            raise ValueError(f"{field}.{name}: not read by a PD decode server: {why}; drop it")


# server arguments a PD prefill server never reads (SGLang 0.5.17): it runs prompts to their first token and hands
# them to the decode server, so it keeps no running batch and captures no CUDA graph
PREFILL_UNREAD = {
    "cuda_graph_max_bs": "a prefill server captures no decode CUDA graph (server_args.py, "
    "_apply_cuda_graph_disaggregation_roles)",
    "disable_cuda_graph": "a prefill server runs without CUDA graphs either way (server_args.py, "
    "_apply_cuda_graph_disaggregation_roles turns its decode graph off, and PD its prefill graph)",
    "enable_mixed_chunk": "a prefill server keeps no running batch whose decode rows could ride in its chunks "
    "(its requests leave for the decode server after their first token)",
    # the client's stream comes from the decode server (the router returns its response); a prefill server's
    # output is the first token alone, one chunk, which both settings leave as it is
    "stream_interval": "the client's stream comes from the decode server; a prefill server sends one chunk, the "
    "first token, which --stream-interval always sends",
    "incremental_streaming_output": "the client's stream comes from the decode server; a prefill server sends one "
    "chunk of one token, the same either way",
}


def check_prefill_settings(serving: ServingSpec, field: str) -> None:
    """A PD prefill server's own arguments that SGLang does not read there (PREFILL_UNREAD): each was accepted
    and changed nothing but, for the CUDA-graph ones, the memory simperf set aside for a graph never captured."""
    for name, why in PREFILL_UNREAD.items():
        if name in serving.model_fields_set:
            raise ValueError(f"{field}.{name}: not read by a PD prefill server: {why}; drop it")
