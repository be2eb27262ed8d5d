"""The tests' reference: the SPEC's formulas in plain NumPy (kept in the
package so the self-check and the benchmarks use the very same code)."""
from fastblock._reference import depth_to_space_ref, space_to_depth_ref

__all__ = ["space_to_depth_ref", "depth_to_space_ref"]
