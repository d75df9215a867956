"""Fleets: many SGLang servers behind SGLang's model gateway (the router), simulated together (docs/fleet.md).

`policies/` holds the gateway's routing policies, one small module each; `approx_tree.py` is cache_aware's
approximate radix tree (one mirror per worker of what the router believes each has cached); `replica.py` makes the
single-server simulator advance in steps so a state-dependent router can read replica loads at each arrival;
`coupled.py` and `independent.py` run regular fleets, `pd.py` PD fleets; `results.py` gathers what the replicas
produce into bench_serving's metrics with bounded memory; `predict.py` is the pipeline's entry point.
"""
