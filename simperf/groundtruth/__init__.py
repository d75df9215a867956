"""Ground truth of our own: real SGLang servers driven by SGLang's bench_serving, recorded as a corpus.

`simperf groundtruth run plan.yaml` runs on a GPU host with SGLang installed (docs/groundtruth.md); nothing here
imports SGLang except the bench_serving child process (`client.py`), so the laptop install does not need it.
"""
