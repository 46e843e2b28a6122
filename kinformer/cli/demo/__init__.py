"""``kinformer demo``: the machinery at work on a live workload against an embedded server."""
