"""How fast the API server takes in a closed loop's later waves, from the corpus' server timestamps.

In a fixed-length closed-loop run the requests of a wave finish in the same decode iteration and bench_serving
sends their successors at once. The first wave's requests reach the server `receive_us_per_request` apart
(first_burst_costs, hostcosts.py); a later wave's reach it about three times further apart although the client
sends them no faster than the first wave's: the API server is finishing the previous wave's requests while it takes
in the new ones. How many of a wave the scheduler's second prefill then holds (SGLang forms it while the first
one's launch holds its CPU) follows from that spacing, and the median TTFT of such runs with it
(docs/overheads.md, "Later waves reach the server slower"). The difference of the two spacings, per run, is the
API server's finishing work per request (hostcosts.finish_us_per_request, Overheads.finish_us_per_request).

    python -m simperf.accuracy.wave_receives groundtruth
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# a wave's sends span a few ms; consecutive waves are a whole decode (>= 1 s at these lengths) apart
WAVE_BREAK_S = 0.05
MIN_CONCURRENCY = 16


@dataclass(frozen=True)
class WaveReceives:
    """Median spacing (ms) of one run's server receive times in its first wave and in its later waves, and of its
    later waves' send times."""

    run: str
    concurrency: int
    later_waves: int
    first_receive_gap_ms: float
    later_receive_gap_ms: float
    later_send_gap_ms: float


def _waves(send_s: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the runs of sends closer together than WAVE_BREAK_S (`send_s` sorted)."""
    breaks = np.where(np.diff(send_s) > WAVE_BREAK_S)[0] + 1
    return np.split(np.arange(len(send_s)), breaks)


def run_receives(run: Path, concurrency: int) -> WaveReceives | None:
    """The spacings of one run, or None where it has no later wave of at least half its concurrency."""
    import polars as pl

    df = pl.read_parquet(run / "requests.parquet", columns=["client_send_s", "server_received_s"])
    df = df.sort("client_send_s")
    send = df["client_send_s"].to_numpy()
    received = df["server_received_s"].to_numpy()
    if np.isnan(received).any():
        return None
    waves = [w for w in _waves(send) if len(w) >= concurrency // 2]
    if len(waves) < 2:
        return None

    def gaps(values: np.ndarray, wave: np.ndarray) -> np.ndarray:
        return np.diff(np.sort(values[wave]))

    later_receive = np.concatenate([gaps(received, w) for w in waves[1:]])
    later_send = np.concatenate([gaps(send, w) for w in waves[1:]])
    return WaveReceives(
        run=str(run),
        concurrency=concurrency,
        later_waves=len(waves) - 1,
        first_receive_gap_ms=float(np.median(gaps(received, waves[0]))) * 1e3,
        later_receive_gap_ms=float(np.median(later_receive)) * 1e3,
        later_send_gap_ms=float(np.median(later_send)) * 1e3,
    )


def corpus_receives(corpus: Path) -> list[WaveReceives]:
    """Every closed-loop corpus run with 16+ streams that sent token ids and has later waves."""
    from simperf.accuracy.corpus import closed_loop_token_runs

    rows = (run_receives(run, c) for run, c in closed_loop_token_runs(corpus, MIN_CONCURRENCY))
    return [row for row in rows if row is not None]


def markdown(rows: list[WaveReceives], corpus: Path) -> str:
    lines = [
        "| run | streams | later waves | first wave: receive gap | later waves: receive gap | send gap |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        name = Path(r.run).relative_to(corpus).as_posix()
        lines.append(
            f"| {name} | {r.concurrency} | {r.later_waves} | {r.first_receive_gap_ms:.2f} ms "
            f"| {r.later_receive_gap_ms:.2f} ms | {r.later_send_gap_ms:.2f} ms |"
        )
    first = statistics.median(r.first_receive_gap_ms for r in rows)
    later = statistics.median(r.later_receive_gap_ms for r in rows)
    send = statistics.median(r.later_send_gap_ms for r in rows)
    lines.append(f"| median over {len(rows)} runs | | | {first:.2f} ms | {later:.2f} ms | {send:.2f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python -m simperf.accuracy.wave_receives CORPUS_DIR", file=sys.stderr)
        return 2
    corpus = Path(args[0])
    rows = corpus_receives(corpus)
    if not rows:
        print(f"error: {corpus}: no closed-loop run with later waves", file=sys.stderr)
        return 2
    print(markdown(rows, corpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
