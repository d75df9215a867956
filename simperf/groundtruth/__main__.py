"""`python -m simperf.groundtruth ...`: the ground-truth commands alone, for GPU hosts whose Python has SGLang's
dependencies but not all of simperf's (no polars or simpy is imported on this path)."""

from simperf.groundtruth.cli import groundtruth_app

groundtruth_app(prog_name="simperf groundtruth")
