"""Run a compiled kernel batch by batch; keep a long run's state on disk and resume it.

Every kernel of :data:`gupsim.engines.fast.engine.KERNELS` has a compiled loop (:attr:`Kernel.loop
<gupsim.engines.fast.contract.Kernel>`) that processes events until its batch ends: a table must grow, or the event
count reached the driver's pause point (``tables.C_PAUSE_AT``, set so that a batch lasts about
:data:`BATCH_TARGET_S` of wall time: :class:`BatchPacer`).  Between batches this driver, in Python, grows the tables that are
short of room, and, once every ``Checkpoint.every_s`` seconds of wall time,
writes the whole state of the run (its arrays and the simulated time) to one
``.npz`` file.  Started again with the same checkpoint, the run resumes from
that file instead of from the beginning, and the file is deleted when the run
ends.

Why it is safe: a batch ends between two events, and what happens between
batches is what the kernel's own batch ends do (growing is done only when due), so a run cut into any number of batches, or stopped and
resumed from a file, gives the uncut run's record bit for bit
(``tests/engines/fast/test_fast_checkpoint.py``).  Why it is needed: seed 000 Table 4's
65,536-node row is about an hour and a half of CPU on a shared box, and a run
stopped near its end without a saved state is lost whole.

**The stopping rule** (``--precision``): a kernel ends its batch after an event that made the updates applied
cross one of the rule's mark counts (:func:`gupsim.engines.fast.core.cross_marks`).  The driver evaluates
the rule there, at each count crossed (:func:`gupsim.model.output_analysis.check_points`); once it holds, it
sets the run's stop time (``C_STOP_T``) to that instant, and the kernel processes the instant's remaining
events and ends before the first later one (``events.past_stop``), as the SimPy engine does
(``Simulation._check_precision``).

A saved state belongs to one run made by one version of the code: the file
carries the caller's key (:attr:`Checkpoint.key`) and a file with another key,
or other tables (another kernel's, or arrays under names this code does not use), is refused in one line.
The arrays are saved under their field names (:class:`gupsim.engines.fast.contract.Network` and the kernel's
``state``), the event queue as ``queue0``, ``queue1``, ...
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from gupsim.base.errors import GupsimError, cannot_write, probe_write
from gupsim.base.memory import peak_rss_mb
from gupsim.engines.fast import core as c, credits as cr, events as ev, tables as tb
from gupsim.engines.fast.contract import NETWORK_PACKET_ARRAYS, QUEUE, Kernel, Network
from gupsim.model.output_analysis import check_points

#: The most events a batch runs.
BATCH_EVENTS = 1 << 24
#: Wall seconds a batch aims at.  A signal (Ctrl-C, SIGTERM) reaches Python only between batches, since the
#: compiled loop holds the main thread, and a fixed count of 2^24 events can take minutes on a loaded box.
BATCH_TARGET_S = 0.5
#: The first batch's events, before the loop's rate is known, and the most a batch grows over the last one.
FIRST_BATCH_EVENTS, BATCH_GROWTH = 1 << 16, 4
#: ``C_STOP_T`` while the stopping rule has not held (no event time's bits exceed it).
NO_STOP = np.iinfo(np.int64).max
#: Wall seconds between two saves: about 1% of the run for the whole machine's 1.6 GB (docs/performance.md).
CHECKPOINT_EVERY_S = 600.0
#: One line per save: how far an hour-long run has got (``gupsim reproduce`` and ``gupsim run`` show it).
log = logging.getLogger(__name__)


@dataclass
class BatchPacer:
    """How many events the next batch runs: what the last batch's rate runs in :data:`BATCH_TARGET_S`, at most
    ``cap`` and at most :data:`BATCH_GROWTH` times the last batch.  Where a batch ends changes no record
    (module docstring), so pacing batches by the wall clock keeps a run a function of its config and seed."""

    cap: int
    events: int = FIRST_BATCH_EVENTS

    def __post_init__(self) -> None:
        self.events = min(self.events, self.cap)

    def run_batch(self, kernel: Kernel, a: dict, now: float) -> tuple[float, bool, float]:
        """Run one batch of ``kernel`` on the arrays ``a`` from ``now``; return the time reached, whether the run
        is over, and the batch's wall seconds (which pace the next batch)."""
        ctr = a["counters"]
        ctr[tb.C_PAUSE_AT] = ctr[tb.C_EVENTS] + self.events
        events_before, started = int(ctr[tb.C_EVENTS]), time.perf_counter()
        # rebuilt every batch: the tables that grew between batches are new arrays
        now, finished = kernel.loop(kernel.state_of(a), network_of(a), now)
        wall_s = time.perf_counter() - started
        self.took(int(ctr[tb.C_EVENTS]) - events_before, wall_s)
        return now, finished, wall_s

    def took(self, events: int, wall_s: float) -> None:
        """The last batch ran ``events`` events in ``wall_s`` seconds."""
        if events <= 0:
            return
        paced = events * BATCH_TARGET_S / wall_s if wall_s > 0 else float(self.cap)
        self.events = int(max(1, min(self.cap, BATCH_GROWTH * events, paced)))


@dataclass(frozen=True)
class Checkpoint:
    """Where a run's state is kept, the key that names the run and its code, and how often it is saved."""

    path: Path
    key: str
    every_s: float = CHECKPOINT_EVERY_S


def drive(kernel: Kernel, a: dict, checkpoint: Checkpoint | None = None,
          batch_events: int = BATCH_EVENTS, total_updates: int = 0,
          progress: Callable[[int, int], None] | None = None,
          stop_rule: Callable[[np.ndarray, int], bool] | None = None) -> tuple[float, float, float]:
    """Run ``kernel`` on the arrays ``a`` (updated in place; keyed by field name) to its end.

    Each save logs the updates applied so far out of ``total_updates``; ``progress``, if given, is told them
    (and ``total_updates``) at the start, after every batch and at the end.  ``stop_rule(applied_times, c)``,
    if given, is the stopping rule on the first ``c`` marks (module docstring).  Returns the final simulated time,
    and the wall seconds spent on this run before this call and the largest peak RSS (MB) of the processes
    that spent them (by the processes whose checkpoint it resumed; 0 and 0 for a fresh run)."""
    if batch_events < 1:
        raise GupsimError(f"batch_events must be at least 1 (got {batch_events})")
    now, earlier_s, earlier_peak_mb = 0.0, 0.0, 0.0
    if checkpoint is not None and checkpoint.path.exists():
        now, earlier_s, earlier_peak_mb = load(checkpoint, a, kernel)
    elif checkpoint is not None:
        check_writable(checkpoint.path)  # now, not at the first save ten minutes in
    started = saved = time.monotonic()
    if progress is not None:
        progress(int(a["counters"][tb.C_APPLIED]), total_updates)
    pacer = BatchPacer(batch_events)
    while True:
        now, finished, _ = pacer.run_batch(kernel, a, now)
        ctr = a["counters"]
        if finished:
            now = cr.settle_all(a[QUEUE], ctr, a["pools"], a["deferred"], now)
        else:
            _check_stop(a, now, stop_rule)
            between_batches(kernel, a)
        if progress is not None:
            progress(int(ctr[tb.C_APPLIED]), total_updates)
        if finished:
            break
        if checkpoint is not None and time.monotonic() - saved >= checkpoint.every_s:
            wall_s = earlier_s + time.monotonic() - started
            save(checkpoint, a, now, wall_s, max(earlier_peak_mb, peak_rss_mb()))
            saved = time.monotonic()
            _log_progress(checkpoint, a["counters"], total_updates, wall_s)
    if checkpoint is not None:
        checkpoint.path.unlink(missing_ok=True)
    return now, earlier_s, earlier_peak_mb


def _check_stop(a: dict, now: float, stop_rule: Callable[[np.ndarray, int], bool] | None) -> None:
    """Evaluate the stopping rule at each of its mark counts crossed since it was last evaluated; once it holds,
    the run ends with the end of the instant ``now``."""
    ctr = a["counters"]
    if stop_rule is None or ctr[tb.C_STOP_T] != NO_STOP:
        return
    if rule_holds(a, stop_rule):
        ctr[tb.C_STOP_T] = np.float64(now).view(np.int64)


def rule_holds(a: dict, stop_rule: Callable[[np.ndarray, int], bool]) -> bool:
    """Whether the stopping rule holds at one of its mark counts crossed since it was last evaluated (which are
    then marked evaluated, ``C_CHECKED``)."""
    ctr = a["counters"]
    crossed = int(ctr[tb.C_MARK_INDEX])
    first = int(a["int_params"][tb.I_FIRST_CHECK])
    held = any(stop_rule(a["applied_times"], c) for c in check_points(int(ctr[tb.C_CHECKED]), crossed, first))
    ctr[tb.C_CHECKED] = crossed
    return held


def network_of(a: dict) -> Network:
    """The network's tuple from the run's arrays."""
    return Network(*(a[name] for name in Network._fields))


def between_batches(kernel: Kernel, a: dict) -> None:
    """Keep the queue's margin, and double the per-packet tables when short of rows."""
    ctr = a["counters"]
    a[QUEUE] = ev.grow_queue(a[QUEUE], ctr)
    if ctr[tb.C_NFREE] < tb.PACKET_MARGIN:
        grow_packets(kernel, a, ctr)
    if kernel.grow_tables is not None:
        kernel.grow_tables(a)


def grow_packets(kernel: Kernel, a: dict, ctr: np.ndarray) -> None:
    """Double the packet tables (the network's and the kernel's); the new rows go to the free list of ``ctr``."""
    old = a["packets"].shape[0]
    for name in NETWORK_PACKET_ARRAYS + kernel.packet_arrays:
        a[name] = tb.grow_on_lines(a[name], 2 * old)
    c.link_free_list(a["packets"], old, 2 * old, ctr)


def _log_progress(checkpoint: Checkpoint, ctr: np.ndarray, total_updates: int, wall_s: float) -> None:
    applied = int(ctr[tb.C_APPLIED])
    share = f" ({applied / total_updates:.1%})" if total_updates else ""
    log.info("%s: %s of %s updates applied%s, %s events, %s s of wall time", checkpoint.path.name,
             f"{applied:,}", f"{total_updates:,}", share, f"{int(ctr[tb.C_EVENTS]):,}", f"{wall_s:,.0f}")


def check_writable(path: Path) -> None:
    """Refuse, in one line, a checkpoint that could not be saved (its folder is a file, or read-only)."""
    try:
        probe_write(path.parent, path.name + ".part")
    except OSError as exc:
        raise cannot_write("checkpoint", path, exc) from None


def save(checkpoint: Checkpoint, a: dict, now: float, wall_s: float, peak_mb: float) -> None:
    """Write the state to ``checkpoint.path`` atomically (a stopped save leaves the previous file whole), with
    the wall seconds and the peak RSS of the run so far: a resumed run's record counts every piece."""
    arrays = {name: value for name, value in a.items() if name != QUEUE}
    arrays |= {f"{QUEUE}{i}": part for i, part in enumerate(a[QUEUE])}  # the queue is a tuple of arrays
    path = Path(checkpoint.path)
    tmp = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = dict(_key=np.array(checkpoint.key), _now=np.array(now), _wall_s=np.array(wall_s),
                      _peak_mb=np.array(peak_mb), **arrays)
        with open(tmp, "wb") as f:
            np.savez(f, _digest=np.array(content_digest(fields)), **fields)
        os.replace(tmp, path)
    except OSError as exc:  # a full disk mid-run: the previous save, if any, is still whole
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise GupsimError(f"{cannot_write('checkpoint', path, exc)} (the previous save, if any, is kept)") from None


def content_digest(fields: dict[str, np.ndarray]) -> str:
    """SHA-256 of every saved array's name, dtype, shape and bytes, in name order.

    A checkpoint is only ever read as plain arrays (``allow_pickle=False``), but the kernels index those arrays
    unchecked: a file edited or damaged so that its shapes still fit would run on garbage.  The digest, saved
    beside the arrays, turns that into a refusal.  It guards against accidents, not an adversary, who could
    recompute it; nothing in the file is ever executed either way."""
    digest = hashlib.sha256()
    for name in sorted(fields):
        value = np.ascontiguousarray(fields[name])
        digest.update(f"{name}:{value.dtype.str}:{value.shape};".encode())
        digest.update(value.data if value.size else b"")
    return digest.hexdigest()


def load(checkpoint: Checkpoint, a: dict, kernel: Kernel) -> tuple[float, float, float]:
    """Replace the arrays of ``a`` by the saved ones; return the saved time, wall seconds and peak RSS.

    ``a`` is a fresh run's state of ``kernel``: every saved array must have its dtype and columns,
    and its rows (or more, for the tables that grow between batches), since the kernels index them unchecked."""
    path = checkpoint.path
    try:
        with np.load(path, allow_pickle=False) as z:
            saved = {name: z[name] for name in z.files}
        digest = str(saved.pop("_digest"))
        key = str(saved["_key"])
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise GupsimError(f"checkpoint {path} is not a readable gupsim checkpoint ({exc}): delete it to start "
                          "afresh") from None
    if key != checkpoint.key:
        # Keys are <code>-<run>: show the part that differs (both prefixes had been the same code digest).
        (code, _, run), (my_code, _, my_run) = key.rpartition("-"), checkpoint.key.rpartition("-")
        other, theirs, mine = ("another run", run, my_run) if code == my_code else ("another gupsim", code, my_code)
        raise GupsimError(f"checkpoint {path} belongs to {other} (key {theirs[:12]}, this run's {mine[:12]}): "
                          "delete it to start afresh")
    digested = content_digest(saved)  # hashed only once the file is this run's, over what save() hashed
    del saved["_key"]
    now, wall_s, peak_mb = (float(saved.pop(k)) for k in ("_now", "_wall_s", "_peak_mb"))
    queue = sorted(k for k in saved if k.startswith(QUEUE))
    expected = set(a) - {QUEUE}
    if set(saved) - set(queue) != expected or len(queue) != len(a[QUEUE]):
        raise GupsimError(f"checkpoint {path} does not hold this kernel's tables: delete it to start afresh")
    _check_shapes(path, saved, {k: a[k] for k in expected} | dict(zip(queue, a[QUEUE])), kernel)
    if digested != digest:  # shaped right, but its values are not what the run saved
        raise GupsimError(f"checkpoint {path} was changed after it was saved (its content digest differs): "
                          "delete it to start afresh")
    for k in expected:  # the tables made on cache lines (tables.line_aligned) are put on lines again
        if a[k].ctypes.data % tb.CACHE_LINE == 0 and saved[k].ctypes.data % tb.CACHE_LINE and saved[k].ndim:
            saved[k] = tb.grow_on_lines(saved[k], saved[k].shape[0])
        a[k] = saved[k]
    a[QUEUE] = tuple(saved[k] for k in queue)
    return now, wall_s, peak_mb


def _check_shapes(path: Path, saved: dict, fresh: dict, kernel: Kernel) -> None:
    """Refuse, naming the array, a saved array not shaped as this run's: an edited or damaged file that the
    kernels would read past the end of (a segmentation fault, not an error).  The tables that grow between
    batches (:func:`between_batches`: the packet tables, the event queue's, the kernel's own) may have more
    rows, the packet tables all the same number."""
    packet_arrays = NETWORK_PACKET_ARRAYS + kernel.packet_arrays
    grown = set(packet_arrays) | set(kernel.grown_arrays)
    for name, want in fresh.items():
        got, grows = saved[name], name in grown or name.startswith(QUEUE)
        more = grows and got.ndim == want.ndim and got.shape[0] >= want.shape[0]
        if got.dtype != want.dtype or got.shape[1:] != want.shape[1:] or (got.shape != want.shape and not more):
            also = " (or more rows)" if grows else ""
            raise GupsimError(f"checkpoint {path}: array {name!r} is {got.dtype} {got.shape}, this run's is "
                              f"{want.dtype} {want.shape}{also}; the file is damaged or not this run's: delete it "
                              "to start afresh")
    rows = {name: saved[name].shape[0] for name in packet_arrays}
    if len(set(rows.values())) > 1:
        raise GupsimError(f"checkpoint {path}: its packet tables differ in rows ({rows}); the file is damaged: "
                          "delete it to start afresh")
