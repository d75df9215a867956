"""`simperf validate`: re-run sampled simulated steps' kernels on a GPU and compare with the predicted step time.

sample (CPU) -> program (CPU: the step's ops with per-rank shapes and real per-request lengths) -> gpu (torch:
build the kernels through the calibration backends, time the layer sequence) -> report (CPU: errors, chart).
"""
