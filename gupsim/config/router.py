"""The torus router a machine's network uses, and the parameters of Blue Gene/L's router as built.

``network.router`` names a router registered with the engines (:data:`ROUTER_NAMES`, the reference engine's
``gupsim.engines.reference.router.ROUTERS``):

* ``bluegene-l``: gupsim's first router (seed 000 §5.1): one escape buffer of ``link_buffer_chunks`` per
  link with the bubble rule, and with adaptive routing one dynamic channel per link, taken on the least busy
  minimal direction.  Every torus machine file names its router; the VC parameters that follow have
  defaults because only ``bgl-vc`` reads them.
* ``bgl-vc``: Blue Gene/L's torus router with its virtual channels counted as the register map counts them
  (docs/research/bgl-router-facts.md rows 2-7): several escape (bubble) VCs and dynamic VCs per input link,
  each its own token pool of ``vc_depth_chunks``, token return after ``token_return_ns``, adaptive choice by
  free downstream tokens in the hint-bit directions.

Every field below cites its row of the facts page or says "assumed"; only ``bgl-vc`` reads them.  The BookSim2
comparison (``benchmarks/booksim_compare.py --gupsim-only``) sets ``escape_vcs`` to BookSim's VCs per
dateline class.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: The routers a machine file may name (the engines register them under these names).
ROUTER_NAMES = ("bluegene-l", "bgl-vc")

_STRICT = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class RouterConfig(BaseModel):
    """Which router, and the parameters of Blue Gene/L's VC router (``name: bgl-vc``)."""

    model_config = _STRICT

    name: Literal["bluegene-l", "bgl-vc"] = Field(
        description="bluegene-l: one escape buffer per link (and one dynamic channel with adaptive routing); "
        "bgl-vc: BG/L's virtual channels and tokens (docs/research/bgl-router-facts.md rows 2-7)")
    escape_vcs: int = Field(
        default=1, ge=1, le=16,
        description="bubble escape VCs per input link for deterministic traffic: 1 on BG/L (BN; BP carries "
        "high-priority packets only, which GUPS does not send; facts rows 2, 3). More stand in for BookSim's "
        "VCs per dateline class")
    dynamic_vcs: int = Field(
        default=2, ge=0, le=16,
        description="dynamic (adaptive) VCs per input link: 2 on BG/L (D0, D1; facts row 2); used only with "
        "routing: adaptive")
    vc_depth_chunks: int = Field(
        default=32, ge=1, le=4096,
        description="tokens (32-byte chunks) of one VC at one input link: not found in any source (facts row 4), "
        "assumed equal to gupsim's link_buffer_chunks; the bubble rule needs room for two full packets")
    token_return_ns: float = Field(
        default=0.0, ge=0, le=1e6,
        description="delay from a packet's tail leaving a VC to its tokens being back at the sender: not found "
        "(facts row 5 states the sender-held tokens, not their return latency), assumed 0")
    arbitration: Literal["arrival"] = Field(
        default="arrival",
        description="who gets a VC's returned tokens among waiting packets: arrival order, continuing packets "
        "before entering ones. BG/L's fullest-FIFO / random mix (157:53, facts row 7, inferred) is not built")

    @model_validator(mode="after")
    def _read_by_the_router_named(self) -> "RouterConfig":
        """bluegene-l reads none of bgl-vc's parameters: one set away from its default would be ignored."""
        if self.name == "bluegene-l":
            unread = [f for f in type(self).model_fields if f != "name"
                      and getattr(self, f) != type(self).model_fields[f].default]
            if unread:
                raise ValueError(f"router.{unread[0]} is read by router bgl-vc only (router.name is bluegene-l)")
        return self
