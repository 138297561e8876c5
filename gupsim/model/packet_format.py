"""What a packet's chunks carry: the bytes the network's own header takes before the algorithm's data.

BG/P's DMA engine puts its header in the packet's chunks (seed 002); BG/L's torus packets and the switched
fabrics carry none there."""

from __future__ import annotations



def data_header_bytes(machine) -> int:
    """Bytes of every packet's chunks that the network's own header takes: the DMA engine's, else none."""
    dma = getattr(machine, "dma", None)  # switched machines have no dma section
    return 0 if dma is None else dma.header_bytes
