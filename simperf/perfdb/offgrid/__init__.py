"""Off-grid kernel checks: a seeded set of realistic kernel calls the tables never saw, timed on a GPU and
predicted from the tables on a CPU (`simperf perfdb check --offgrid`, docs/perfdb.md "Off the grid").

samples.py generates the set (CPU), timing.py times it (GPU; imports neither polars nor numpy), predict.py and
report.py price every call the way the cost model would and summarise the error (CPU).
"""
