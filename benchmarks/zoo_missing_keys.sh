#!/usr/bin/env bash
# The GEMM, BMM and elementwise keys the zoo's layouts run that had no table (calibration/grids/
# issue19_zoo_missing_keys.yaml), with the device kit (.kit) as the tables' other rows; each op starts from the
# committed table (SEED=1). From the project root on the GPU host:
#   bash benchmarks/zoo_missing_keys.sh h100 400
# then: python -m simperf.calibrate --merge-from <files_at>/zk-<op> --out calibration/<gpu>   (elementwise, bmm, gemm;
# `--ops gemm` is the GEMM category and times the grid's 30 BMMs again, into a table the script does not copy out)
gpu=$1 budget=$2 t0=$(date +%s) grid=calibration/grids/issue19_zoo_missing_keys.yaml
left() { echo $(( budget - ($(date +%s) - t0) )); }
SEED=1 EXTRA="--replay-target-ms 15" bash benchmarks/calibrate_grid.sh kit elementwise zk-elementwise "$gpu" 150 $grid
SEED=1 EXTRA="--replay-target-ms 15" bash benchmarks/calibrate_grid.sh kit bmm zk-bmm "$gpu" 40 $grid
SEED=1 EXTRA="--replay-target-ms 15" bash benchmarks/calibrate_grid.sh kit gemm zk-gemm "$gpu" "$(left)" $grid
