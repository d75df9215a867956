"""How many requests a closed-loop run actually kept in flight, against the `--max-concurrency` it asked for.

bench_serving's own "Concurrency" (total latency / duration) includes the ramp-down after the last send, so it
cannot tell a client that kept C requests in flight from one that did not. While the client still has requests to
send (from the first send to the last), a saturated client holds exactly C in flight: that window's time-weighted
mean is the achieved concurrency, and no instant may exceed C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.records import RequestRecords

SATURATION_TOLERANCE = 0.01  # a saturated closed loop keeps C in flight within 1%


class ConcurrencyNotHeld(RuntimeError):
    """The simulated client broke its own semaphore: a bug in the simulator, never a property of a scenario."""


@dataclass(frozen=True)
class InFlight:
    requested: int | None
    mean_while_sending: float  # time-weighted mean from the first wave's last send to the last send
    max: int  # most requests in flight at any instant

    def as_json(self) -> dict[str, float | int | None]:
        return {
            "requested": self.requested,
            "mean_in_flight_while_sending": self.mean_while_sending,
            "max_in_flight": self.max,
        }

    def describe(self) -> str:
        asked = f" of {self.requested}" if self.requested is not None else ""
        return f"{self.mean_while_sending:.1f}{asked} (max {self.max})"


def in_flight(send_s: np.ndarray, finish_s: np.ndarray, requested: int | None) -> InFlight:
    send = np.asarray(send_s, dtype=np.float64)
    finish = np.asarray(finish_s, dtype=np.float64)
    if send.size == 0:
        return InFlight(requested, 0.0, 0)
    times = np.concatenate((finish, send))
    # at equal times a finish frees its slot before the next request takes it
    deltas = np.concatenate((np.full(finish.size, -1), np.full(send.size, 1)))
    order = np.lexsort((deltas, times))
    times, level = times[order], np.cumsum(deltas[order])
    start, end = float(send.min()), float(send.max())
    if requested is not None and send.size >= requested > 0:
        # the first wave's requests are set up one after another (Overheads.client_setup_us_per_request): the
        # client holds C in flight once the last of them is sent
        start = float(np.sort(send)[requested - 1])
    if end <= start:
        return InFlight(requested, float(level[times <= start][-1]), int(level.max()))
    # level[i] holds from times[i] to times[i + 1]; integrate it over [start, end]
    left = np.clip(times, start, end)
    right = np.clip(np.append(times[1:], times[-1]), start, end)
    mean = float(np.sum(level * (right - left)) / (end - start))
    return InFlight(requested, mean, int(level.max()))


def records_in_flight(records: RequestRecords, requested: int | None) -> InFlight:
    return in_flight(records.send_s, records.finish_s, requested)


def check_closed_loop(held: InFlight, saturated: bool) -> None:
    """The client never exceeds its limit; a saturated one (every request ready at the start, none rejected)
    keeps the limit in flight while it sends."""
    if held.requested is None:
        return
    if held.max > held.requested:
        raise ConcurrencyNotHeld(
            f"simulated client held {held.max} requests in flight with --max-concurrency {held.requested}"
        )
    if saturated and held.mean_while_sending < held.requested * (1 - SATURATION_TOLERANCE):
        raise ConcurrencyNotHeld(
            f"simulated client kept {held.mean_while_sending:.1f} requests in flight on average while sending, "
            f"asked for {held.requested}"
        )
