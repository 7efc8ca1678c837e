"""What every score-bias scheme checks and shares: query/key positions, and one row for a shared batch."""

from __future__ import annotations

from torch import Tensor

from posenc_lib.checks import check_integer_tensor

__all__ = ["check_qk_positions", "shared_rows"]


def check_qk_positions(q_positions: Tensor, k_positions: Tensor) -> None:
    """Both (batch|1, len) integer tensors with broadcastable batch sizes."""
    check_integer_tensor("q_positions", q_positions)
    check_integer_tensor("k_positions", k_positions)
    for name, p in (("q_positions", q_positions), ("k_positions", k_positions)):
        if p.dim() != 2:
            raise ValueError(f"{name} must have shape (batch, seq) or (1, seq), got {tuple(p.shape)}")
    bq, bk = q_positions.shape[0], k_positions.shape[0]
    if bq != bk and 1 not in (bq, bk):
        raise ValueError(
            f"q_positions and k_positions must have the same batch size (or 1), got {bq} and {bk}"
        )


def shared_rows(q_positions: Tensor, k_positions: Tensor) -> tuple[Tensor, Tensor]:
    """One row of each when every batch row is the same view (``default_positions`` expands one row).

    A bias is then built once, (1, heads, q_len, k_len), and broadcast over the batch, instead
    of batch identical copies. Decided from the strides alone, so it never reads the data.
    """
    if q_positions.stride(0) == 0 and k_positions.stride(0) == 0:
        return q_positions[:1], k_positions[:1]
    return q_positions, k_positions
