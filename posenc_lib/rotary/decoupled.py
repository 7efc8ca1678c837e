"""Decoupled RoPE (DeepSeek-V2/V3, multi-head latent attention): only a trailing slice of each head rotates.

MLA compresses keys and values into a small latent vector per token and rebuilds the per-head keys
from it by a matrix that can be folded into the query projection at inference. A rotation between
the two would break that fold (R_m does not commute with the matrices), so DeepSeek keeps position
out of the compressed part and gives it a slice of its own: per head,

    q = [q_nope | q_rope]      k = [k_nope | k_rope]      q . k = q_nope . k_nope + R_m q_rope . R_n k_rope

with only the trailing ``rope_dim`` dims rotated (GPT-NeoX-style: frequencies of a head of width
``rope_dim``). In MLA k_rope is one vector per token shared by all heads (a projection of x); that
sharing is the model's projection, not the scheme's: the scheme rotates whatever k it is given.

DeepSeek-V3 checkpoints use the interleaved layout inside the rotated slice (Hugging Face:
``rope_interleave=True``, ``apply_rotary_pos_emb_interleave``, which returns the rotated pairs in
half order: evens then odds). Its YaRN splits the temperature: cos and sin get
``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)`` and the softmax scale
``yarn_mscale(s, mscale_all_dim) ** 2``; :meth:`DecoupledRoPE.score_scale` declares the latter.

Shapes:
    q, k       (batch, heads, seq, nope_dim + rope_dim)
    positions  (batch|1, seq) integer
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from posenc_lib.checks import check_even_int, check_float_tensor, check_int
from posenc_lib.rotary.rope import Layout, RotaryPE
from posenc_lib.rotary.scaling import yarn_mscale
from posenc_lib.scheme import PositionScheme

__all__ = ["DecoupledRoPE"]


class DecoupledRoPE(PositionScheme):
    """RoPE on the trailing ``rope_dim`` dims of each head, the leading ``nope_dim`` dims untouched.

    Args:
        nope_dim: leading dims per head without position (DeepSeek-V3: qk_nope_head_dim = 128).
        rope_dim: trailing dims per head that rotate (qk_rope_head_dim = 64), even.
        base, layout, scaling: as for :class:`~posenc_lib.rotary.rope.RotaryPE`
            of width ``rope_dim`` (DeepSeek-V3: layout "interleaved", YaRN with factor 40,
            ``mscale`` = ``mscale_all_dim`` = 1).

    The rotation is a :class:`RotaryPE` (attribute ``rope``) applied to the slice. The score scale is
    ``head_dim ** -0.5`` times ``yarn_mscale(factor, mscale_all_dim) ** 2`` when ``scaling`` has a
    ``mscale_all_dim`` (as Hugging Face's ``DeepseekV3Attention.scaling``), else ``head_dim ** -0.5``,
    with head_dim = nope_dim + rope_dim.
    """

    kind = "rotary"

    def __init__(
        self,
        nope_dim: int,
        rope_dim: int,
        base: float = 10000.0,
        layout: Layout = "half",
        scaling: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.nope_dim = check_int("nope_dim", nope_dim, minimum=0)
        check_even_int("rope_dim", rope_dim)
        self.rope = RotaryPE(rope_dim, base=base, layout=layout, scaling=scaling)
        self.rope_dim = rope_dim
        self.head_dim = self.nope_dim + rope_dim
        m_all = self.rope.config.get("mscale_all_dim")
        self.softmax_gain = yarn_mscale(self.rope.config["factor"], m_all) ** 2 if m_all else 1.0

    def extra_repr(self) -> str:
        return f"nope_dim={self.nope_dim}, rope_dim={self.rope_dim}"

    def score_scale(self, head_dim: int) -> float:
        """``head_dim ** -0.5`` times DeepSeek's YaRN gain ``yarn_mscale(factor, mscale_all_dim) ** 2`` (1 without it)."""
        return super().score_scale(head_dim) * self.softmax_gain

    def rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """The slice's cos and sin at ``positions`` for every layer of one forward pass (its RotaryPE's)."""
        return self.rope.rotation_tables(positions, dtype)

    def rotate_qk(
        self, q: Tensor, k: Tensor, positions: Tensor, tables: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """Rotate the trailing rope_dim dims of q (batch, heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim).

        ``tables``: :meth:`rotation_tables` of these positions (None: computed here)."""
        for name, x in (("q", q), ("k", k)):
            check_float_tensor(name, x)
            if x.dim() != 4 or x.shape[-1] != self.head_dim:
                raise ValueError(f"{name} must have shape (batch, heads, seq, nope_dim + rope_dim = {self.nope_dim} + "
                                 f"{self.rope_dim}), got {tuple(x.shape)}")
        n = self.nope_dim
        q_rot, k_rot = self.rope.rotate_qk(q[..., n:], k[..., n:], positions, tables)
        return torch.cat((q[..., :n], q_rot), dim=-1), torch.cat((k[..., :n], k_rot), dim=-1)
