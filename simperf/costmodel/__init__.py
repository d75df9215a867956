"""Step time of a batch: walks the model's op list, asks the perf database, adds named overheads."""
