"""Stand-ins for the outside world (carrier, model service) that run on this machine for tests and benchmarks."""
