"""What each request's client received: its streamed chunks' times, gathered from where the simulator keeps them.

A token from an extend is emitted when its batch is processed (`batch_emit[key]`); decode tokens are entries of
its rank's token timeline (`timeline_emit`). Each request's `events` name those places in order ("p": one batch,
"s": a stretch of timeline entries), so its chunk times are ranges of one array of every emit time, gathered with
one fancy index instead of a concatenation per request. At a stream interval k > 1 a request's tokens reach its
client in chunks: its first token alone, then each token whose count is 1 mod k with the ones before it, and its
last (SGLang 0.5.17 output_streamer.py); a chunk's time is its last token's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from simperf.records import RequestRecords
from simperf.sim.request import RequestTable


def _ranges(
    table: RequestTable,
    done_ids: list[int],
    timeline_base: list[int],
    timeline_len: list[int],
    speculative: bool,
) -> tuple[list[int], list[int], list[np.ndarray], list[int]]:
    """(range starts, range lengths, tokens per chunk (speculative only), per-request chunk offsets)."""
    range_starts: list[int] = []
    range_lens: list[int] = []
    chunk_tokens: list[np.ndarray] = []
    one = np.ones(1, dtype=np.int64)
    offsets = [0]
    for r in done_ids:
        n = 0
        for ev in table.events[r]:
            if ev[0] == "p":
                range_starts.append(ev[1])
                range_lens.append(1)
                n += 1
                if speculative:
                    chunk_tokens.append(one)
            else:
                _, rank_id, start, stop, accepts = ev
                end = timeline_len[rank_id]
                length = max(min(stop, end) - min(start, end), 0)  # as a slice would clip it
                range_starts.append(timeline_base[rank_id] + start)
                range_lens.append(length)
                n += length
                if speculative:
                    chunk_tokens.append(accepts[: stop - start])
        offsets.append(offsets[-1] + n)
    return range_starts, range_lens, chunk_tokens, offsets


def _sent_chunks(
    token_s: np.ndarray, offsets: np.ndarray, interval: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk times, tokens per chunk, per-request chunk offsets) of one-token-a-step streams sent at `interval`:
    each request's tokens 1, interval + 1, 2 x interval + 1, ... and its last carry the ones since the previous."""
    per_request = np.diff(offsets)
    starts = np.repeat(offsets[:-1], per_request)
    count = np.arange(len(token_s), dtype=np.int64) - starts + 1  # a token's count within its request
    sent = (count % interval == 1) | (count == np.repeat(per_request, per_request))
    sent_count = count[sent]
    carried = np.diff(sent_count, prepend=0)
    carried[sent_count == 1] = 1  # a request's first chunk carries its first token alone
    chunk_offsets = np.concatenate(
        ([0], np.cumsum(np.add.reduceat(sent, offsets[:-1]) if len(per_request) else []))
    )
    return token_s[sent], carried, chunk_offsets.astype(np.int64)


def build_records(
    table: RequestTable,
    n: int,
    batch_emit: Sequence[float],
    timelines: Sequence[np.ndarray],
    finish_s: np.ndarray,
    send_s: np.ndarray,
    egress_s: float,
    speculative: bool,
    rejected: list[tuple[int, str]],
    stream_interval: int = 1,
) -> RequestRecords:
    """Records of the requests that finished (`finish_s` not NaN), client-side times (egress added)."""
    done_ids = [r for r in range(n) if not math.isnan(finish_s[r])]
    shifted = [tl + egress_s for tl in timelines]
    all_emits = np.concatenate([np.asarray(batch_emit) + egress_s, *shifted])
    timeline_len = [len(tl) for tl in shifted]
    timeline_base = np.cumsum([len(batch_emit), *timeline_len]).tolist()
    range_starts, range_lens, chunk_tokens, offsets = _ranges(
        table, done_ids, timeline_base, timeline_len, speculative
    )
    lens = np.asarray(range_lens, dtype=np.int64)
    first_of_range = np.cumsum(lens) - lens
    index = np.repeat(np.asarray(range_starts, dtype=np.int64) - first_of_range, lens)
    index += np.arange(len(index), dtype=np.int64)
    flat = all_emits[index]
    if done_ids:
        # a request's last chunk is its finish (the engine spreads a batch's finishes over the API server's writes)
        flat[np.asarray(offsets[1:], dtype=np.int64) - 1] = finish_s[done_ids]
    if speculative and chunk_tokens:
        num_tokens = np.concatenate(chunk_tokens).astype(np.int64)
    else:
        num_tokens = np.ones(len(flat), dtype=np.int64)
    offs = np.asarray(offsets, dtype=np.int64)
    if stream_interval > 1 and len(flat):
        flat, num_tokens, offs = _sent_chunks(flat, offs, stream_interval)
    ids = np.asarray(done_ids, dtype=np.int64)
    some = len(ids) > 0
    return RequestRecords(
        request_id=ids,
        send_s=send_s[ids] if some else np.zeros(0),
        input_len=np.asarray([table.input_len[r] for r in done_ids], dtype=np.int64),
        output_len=np.asarray([table.output_len[r] for r in done_ids], dtype=np.int64),
        first_token_s=flat[offs[:-1]] if some else np.zeros(0),
        finish_s=finish_s[ids] if some else np.zeros(0),
        chunk_offsets=offs,
        chunk_time_s=flat,
        chunk_num_tokens=num_tokens,
        dp_rank=np.asarray([table.rank[r] for r in done_ids], dtype=np.int64),
        retractions=np.asarray([table.retractions[r] for r in done_ids], dtype=np.int64),
        cached_tokens=np.asarray([max(table.cached_at_admission[r], 0) for r in done_ids], dtype=np.int64),
        duration_s=float(np.nanmax(finish_s)) if some else 0.0,
        extra={"rejected": list(rejected)},
    )
