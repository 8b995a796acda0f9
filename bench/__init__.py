"""On-demand benchmarks (``make bench``); never run as tests."""
