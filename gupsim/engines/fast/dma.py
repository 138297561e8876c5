"""Blue Gene/P's DMA engine and sender-driven throttling, compiled: :mod:`gupsim.engines.reference.dma` as events.

Seed 002 §2-§3.4 (the model and its sources: the reference module's docstring).  Every node has one injection
and one reception DMA server at ``dma.engine_bytes_per_s``, shared by its cores; a packet's first link is
entered only when it is idle or busy with the node's own injected packets, else the packet is held back: the
node's held-back packets for a link queue first in, first out (the DMA's injection FIFOs are in order), and only
the queue's head backs off ``throttle_backoff_ns`` past the link's reservation and looks again; when it enters
the link the next heads the queue and looks at once.  A packet that arrived over the torus pays
``rx_packet_overhead_ns`` at reception; an intra-node packet goes down to the DMA and back up, skipping the links.

The reference runs a packet through the DMA as one SimPy process (``DmaNetwork._dma_transit``) before the plain
network's transit; here a packet's column ``PK_DMA`` says how far it has got (``DMA_*``), and each of the
process's yields is one event of the packet's own kinds (the intra-node path's steps, which use the credit
pools, are :mod:`gupsim.engines.fast.core`'s ``_dma_local``), scheduled at the same instant with the same priority
and in the same order, so the records equal the reference's bit for bit:

* ``DMA_NEW``: launched; its ``EV_HOP`` at the launch instant (URGENT) is the process's Initialize, which
  reserves the node's injection engine and schedules the end of that service (an ``EV_HOP``, NORMAL);
* ``DMA_TX``: the service has ended; an intra-node packet asks for room in its receiver's reception FIFO
  (``W_DMA_REC`` while it waits), a torus packet checks its first link (:func:`throttled`);
* ``DMA_THROTTLE``: held back.  The queue's head has a back-off poll (an ``EV_HOP``) pending, the others none;
  when the poll comes the link is looked at again, and when the head enters the link the next packet's
  ``EV_HOP`` is pushed at that instant (the reference's ``Event.succeed``);
* ``DMA_NET``: in the torus, as on BG/L (:mod:`gupsim.engines.fast.core`);
* ``DMA_RX``: its tail is in and the reception engine serves it; its ``EV_TAIL`` puts it in the inbox.

The engines' state: the link table's column ``LF_LOCAL_END`` (the end of the last reservation made by the node's
injection on each link) and, below the links (from row ``I_DMA_ROW``), one row per node with its two engines'
free-at times and busy seconds, and below those, one row per link with its throttle queue's head and tail packets
(``TQ_*``, from row ``I_THROTTLE_ROW``; the queue is linked through ``PK_NEXT``, which a held-back packet does not
otherwise use).  The throttle's counters: ``C_THROTTLE_WAITS`` (packets held back), ``C_THROTTLE_POLLS`` (the
head's back-off polls) and ``C_THROTTLE_QUEUED`` (those held behind another); the seconds packets were held back
are summed per link (``TQ_THROTTLED_S``), and the run's total is their exact sum (``links.throttled_total_s``).
"""

from __future__ import annotations

from numba import njit

from gupsim.engines.fast.events import NORMAL, event, push
from gupsim.engines.fast.tables import C_THROTTLE_POLLS, C_THROTTLE_QUEUED, C_THROTTLE_WAITS, EV_HOP, EV_TAIL, F_BACKOFF_S, F_DMA_RATE, F_RATE, F_RX_OVERHEAD_S, I_DMA_ROW, I_THROTTLE_ROW, LF_FREE, LF_LOCAL_END, LF_RX_BUSY, LF_RX_FREE, LF_TX_BUSY, LF_TX_FREE, PF_ASKED, PK_DMA, PK_DST, PK_NEXT, PK_NODE, PK_SRC, PK_WIRE, TQ_HEAD, TQ_TAIL, TQ_THROTTLED_S, node_of

DMA_NEW, DMA_TX, DMA_THROTTLE, DMA_NET, DMA_RX = 0, 1, 2, 3, 4


@njit(cache=True, _nrt=False)
def transmit(pk, lf, ip, fp, hh, ctr, p, now):
    """``_dma_transit``'s start: serve the packet on its node's injection engine, first come, first served."""
    row = ip[I_DMA_ROW] + pk[p, PK_NODE]
    service = pk[p, PK_WIRE] / fp[F_DMA_RATE]
    start = max(now, lf[row, LF_TX_FREE])
    lf[row, LF_TX_FREE] = start + service
    lf[row, LF_TX_BUSY] += service
    pk[p, PK_DMA] = DMA_TX
    push(hh, ctr, now + (start + service - now), NORMAL, event(EV_HOP, p))


@njit(cache=True, _nrt=False)
def throttled(pk, pf, lf, ip, fp, hh, ctr, p, link, now):
    """Sender-driven throttling at the packet's first ``link``: True when it is held back (queued behind the
    node's earlier held packets for the link, or heading that queue with its poll scheduled), False when it may
    enter the network now (the link's local reservation noted)."""
    free = lf[link, LF_FREE]
    q = ip[I_THROTTLE_ROW] + link
    if pk[p, PK_DMA] == DMA_TX:
        if free > now and free != lf[link, LF_LOCAL_END]:
            behind = lf[q, TQ_HEAD] >= 0
            ctr[C_THROTTLE_WAITS] += 1
            pf[p, PF_ASKED] = now  # when the back-off began (the field is free until it waits for a link)
            pk[p, PK_DMA] = DMA_THROTTLE
            pk[p, PK_NEXT] = -1
            if behind:  # no poll of its own: the head's departure starts its turn
                ctr[C_THROTTLE_QUEUED] += 1
                pk[int(lf[q, TQ_TAIL]), PK_NEXT] = p
            else:
                lf[q, TQ_HEAD] = p
                ctr[C_THROTTLE_POLLS] += 1
                push(hh, ctr, now + (free - now + fp[F_BACKOFF_S]), NORMAL, event(EV_HOP, p))
            lf[q, TQ_TAIL] = p
            return True
    else:  # the head's back-off ended, or its turn came: look again
        if free > now:
            ctr[C_THROTTLE_POLLS] += 1
            push(hh, ctr, now + (free - now + fp[F_BACKOFF_S]), NORMAL, event(EV_HOP, p))
            return True
        lf[q, TQ_THROTTLED_S] += now - pf[p, PF_ASKED]
        nxt = pk[p, PK_NEXT]
        lf[q, TQ_HEAD] = nxt
        if nxt >= 0:  # the next held packet heads the queue and looks at the link at once
            push(hh, ctr, now, NORMAL, event(EV_HOP, nxt))
    lf[link, LF_LOCAL_END] = max(now, free) + pk[p, PK_WIRE] / fp[F_RATE]
    return False


@njit(cache=True, _nrt=False)
def receive(pk, lf, ip, fp, hh, ctr, p, now):
    """``DmaNetwork.dma_receive``: serve the packet on its node's reception engine; it reaches the inbox after."""
    node = node_of(ip, pk[p, PK_DST])
    row = ip[I_DMA_ROW] + node
    service = pk[p, PK_WIRE] / fp[F_DMA_RATE]
    if node_of(ip, pk[p, PK_SRC]) != node:
        service += fp[F_RX_OVERHEAD_S]
    start = max(now, lf[row, LF_RX_FREE])
    lf[row, LF_RX_FREE] = start + service
    lf[row, LF_RX_BUSY] += service
    pk[p, PK_DMA] = DMA_RX
    push(hh, ctr, now + (start + service - now), NORMAL, event(EV_TAIL, p))
