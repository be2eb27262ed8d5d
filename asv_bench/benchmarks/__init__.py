"""asv benchmarks of fastblock: one module per operator, shared pieces in ``common``."""
