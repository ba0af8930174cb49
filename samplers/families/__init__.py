"""One module per sampler family: its recipe (H, D, Q), its fast path and its spec."""
