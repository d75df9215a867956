"""`simperf calibrate`: time real GPU kernels into the Parquet tables under calibration/<gpu>/.

The runner (no torch) picks points from the grid, runs each worker group in a subprocess, journals every
result and compacts to Parquet. GPU code lives in simperf.calibrate.backends and imports torch lazily.
"""
