"""The run-argument keys bench_serving writes at the top of its result JSON, derived from a WorkloadSpec."""

from __future__ import annotations

from simperf.scenario.models import (
    FixedDataset,
    MultiTurnDataset,
    RandomDataset,
    SharedPrefixDataset,
    TraceDataset,
    WorkloadSpec,
)


def bench_arguments(workload: WorkloadSpec) -> dict[str, object]:
    """backend, dataset_name, request_rate, max_concurrency and the random_* lengths, as bench_serving names them.

    A fixed dataset is bench_serving's `random` with range ratio 1; a trace replayed on its own timestamps reports
    request_rate "trace", as bench_serving does for trace replay.
    """
    dataset = workload.dataset
    request_rate: object = workload.rate
    if isinstance(dataset, TraceDataset):
        dataset_name = "trace"
        if dataset.use_timestamps:
            request_rate = "trace"
        input_len = output_len = range_ratio = None
    elif isinstance(dataset, RandomDataset | FixedDataset):
        dataset_name = "random"
        input_len, output_len = dataset.input_len, dataset.output_len
        range_ratio = dataset.range_ratio if isinstance(dataset, RandomDataset) else 1.0
    elif isinstance(dataset, SharedPrefixDataset):
        dataset_name = "generated-shared-prefix"  # bench_serving's --dataset-name for it
        input_len = output_len = range_ratio = None
    elif isinstance(dataset, MultiTurnDataset):
        dataset_name = "multi_turn"  # simperf's own generator; bench_serving has no such dataset name
        input_len = output_len = range_ratio = None
    else:  # pragma: no cover - the pydantic union admits only the kinds above
        raise TypeError(f"unsupported dataset {type(dataset).__name__}")
    return {
        "backend": "sglang",
        "dataset_name": dataset_name,
        "request_rate": request_rate,
        "max_concurrency": workload.max_concurrency,
        "random_input_len": input_len,
        "random_output_len": output_len,
        "random_range_ratio": range_ratio,
    }
