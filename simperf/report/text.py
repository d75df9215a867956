"""The human-readable result block, laid out as sglang.bench_serving prints it, plus simperf's own notes.

Lines and their order follow bench_serving's `benchmark()` printout (40-wide label, value left-aligned in 10).
Left out: "Total generated tokens (retokenized)" (simperf has no text to re-tokenise) and "Total input vision
tokens" (text-only workloads).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

_WIDTH = 50

Formatter = Callable[[object], str]


def _plain(value: object) -> str:
    return f"{value!s:<10}"


def _two_decimals(value: object) -> str:
    return f"{float(value):<10.2f}"  # type: ignore[arg-type]


def _concurrency_limit(value: object) -> str:
    return _plain(value if value else "not set")


# (label, result key, formatter); a line whose key is absent from the result is skipped.
_HEADER_LINES: tuple[tuple[str, str, Formatter], ...] = (
    ("Backend:", "backend", _plain),
    ("Traffic request rate:", "request_rate", _plain),
    ("Max request concurrency:", "max_concurrency", _concurrency_limit),
    ("Successful requests:", "completed", _plain),
    ("Benchmark duration (s):", "duration", _two_decimals),
    ("Total input tokens:", "total_input_tokens", _plain),
    ("Total input text tokens:", "total_input_tokens", _plain),  # equal for text-only prompts
    ("Total generated tokens:", "total_output_tokens", _plain),
    ("Request throughput (req/s):", "request_throughput", _two_decimals),
    ("Input token throughput (tok/s):", "input_throughput", _two_decimals),
    ("Output token throughput (tok/s):", "output_throughput", _two_decimals),
    ("Peak output token throughput (tok/s):", "max_output_tokens_per_s", _two_decimals),
    ("Peak concurrent requests:", "max_concurrent_requests", _plain),
    ("Total token throughput (tok/s):", "total_throughput", _two_decimals),
    ("Concurrency:", "concurrency", _two_decimals),
)

_SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "End-to-End Latency",
        (
            ("Mean E2E Latency (ms):", "mean_e2e_latency_ms"),
            ("Median E2E Latency (ms):", "median_e2e_latency_ms"),
            ("P90 E2E Latency (ms):", "p90_e2e_latency_ms"),
            ("P99 E2E Latency (ms):", "p99_e2e_latency_ms"),
        ),
    ),
    (
        "Time to First Token",
        (
            ("Mean TTFT (ms):", "mean_ttft_ms"),
            ("Median TTFT (ms):", "median_ttft_ms"),
            ("P99 TTFT (ms):", "p99_ttft_ms"),
        ),
    ),
    (
        "Time per Output Token (excl. 1st token)",
        (
            ("Mean TPOT (ms):", "mean_tpot_ms"),
            ("Median TPOT (ms):", "median_tpot_ms"),
            ("P99 TPOT (ms):", "p99_tpot_ms"),
        ),
    ),
    (
        "Inter-Token Latency",
        (
            ("Mean ITL (ms):", "mean_itl_ms"),
            ("Median ITL (ms):", "median_itl_ms"),
            ("P95 ITL (ms):", "p95_itl_ms"),
            ("P99 ITL (ms):", "p99_itl_ms"),
            ("Max ITL (ms):", "max_itl_ms"),
        ),
    ),
)


def _line(label: str, value: str) -> str:
    return f"{label:<40} {value}"


def bench_block_lines(result: dict, title: str, notes: dict[str, str] | None) -> list[str]:
    """The block as lines of text (print_bench_block writes these)."""
    lines = ["", f"{' ' + title + ' ':=^{_WIDTH}}"]
    for label, key, fmt in _HEADER_LINES:
        if key in result:
            lines.append(_line(label, fmt(result[key])))
    if result.get("accept_length"):
        lines.append(_line("Accept length:", _two_decimals(result["accept_length"])))
    for heading, rows in _SECTIONS:
        lines.append(f"{heading:-^{_WIDTH}}")
        lines.extend(_line(label, _two_decimals(result[key])) for label, key in rows if key in result)
    if notes:
        lines.append(f"{'simperf':-^{_WIDTH}}")
        for label, value in notes.items():
            lines.append(_line(label if label.endswith(":") else label + ":", _plain(value)))
    lines.append("=" * _WIDTH)
    return lines


def print_bench_block(result: dict, console: Console, title: str, notes: dict[str, str] | None) -> None:
    """Print the block; `title` is centred in the '=' rule (bench_serving's is "Serving Benchmark Result")."""
    for line in bench_block_lines(result, title, notes):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
