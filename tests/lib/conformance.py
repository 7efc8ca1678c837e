"""Shared by the conformance tests: assert one comparison with reference code and keep its largest difference.

    MAX_ERRORS = MaxErrors()
    MAX_ERRORS.record("cos/sin Llama default", ours, theirs)          # asserts |ours - theirs| <= 1e-6
    MAX_ERRORS.report()                                               # the table, largest difference per name

A test module keeps one table and prints it at its end (``pytest FILE -s`` shows it).
"""

from __future__ import annotations

import torch

TOL = 1e-6


class MaxErrors(dict[str, float]):
    """Comparison name -> the largest absolute difference recorded under it."""

    def record(self, name: str, got: torch.Tensor, expected: torch.Tensor, tol: float = TOL) -> None:
        """Assert equal shapes and |got - expected| <= tol everywhere; keep the largest difference under ``name``."""
        assert got.shape == expected.shape, (name, got.shape, expected.shape)
        error = (got.double() - expected.double()).abs().max().item() if got.numel() else 0.0
        self[name] = max(self.get(name, 0.0), error)
        assert error <= tol, f"{name}: max |difference| {error:.3g} > {tol:g}"

    def report(self, title: str = "max |ours - transformers| per comparison:") -> None:
        print(f"\n{title}")
        for name, error in sorted(self.items()):
            print(f"  {name:62s} {error:.3e}")
