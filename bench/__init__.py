"""Benchmarks of posenc_lib: RoPE speed against the memory floor, and every scheme's time and memory vs length (`make bench`)."""
