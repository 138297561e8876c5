"""Human-readable summaries of run records and bounds (the CLI's output), and which of a record's fields
measure the simulator rather than the model (:data:`MEASURED_KEYS`).

A run is a pure function of (config, seed): every field of its record but the measured ones is equal, bit
for bit, between two runs of one configuration (``tests/engines/reference/test_simulation.py``), on one engine or after a
checkpoint's resume.  The measured fields live here, in a presentation module, so that naming them is not a
change of model code (``gupsim.studies.runpool.code_digest``) that would make every kept run stale.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gupsim.config.plausible import larger_than_built
from gupsim.studies.headline import WINDOW_COLUMN, Headline, headline_record
from gupsim.studies.limiting import Limit

SUMMARY_ROWS = (
    ("cycles_per_update", "cycles per update per process", "{:.1f}"),
    ("bytes_per_update", "wire bytes per update", "{:.2f}"),
    ("updates_per_message", "updates per message", "{:.3f}"),
    ("updates_per_packet", "updates per packet", "{:.3f}"),
    ("send_blocking_factor", "send-blocking factor", "{:.5f}"),
    ("link_utilisation_mean", "link utilisation, mean", "{:.3f}"),
    ("link_utilisation_max", "link utilisation, max", "{:.3f}"),
    ("updates_generated", "updates generated", "{:,}"),
    ("updates_applied", "updates applied", "{:,}"),
    ("sim_time_s", "simulated time [s]", "{:.6f}"),
    ("events", "events", "{:,}"),
    ("wall_s", "wall time [s]", "{:.2f}"),
    ("compile_s", "kernel compile time [s]", "{:.2f}"),
    ("threads", "threads", "{:.0f}"),
    ("parallel_efficiency", "threads' time running events", "{:.0%}"),
    ("events_per_s", "events per wall second", "{:,.0f}"),
    ("peak_rss_mb", "peak memory [MB]", "{:.0f}"),
)
#: The rates other than the headline, shown only when asked (``gupsim run --all-rates``): named for what they are.
OTHER_RATES = (
    (WINDOW_COLUMN, "rate between 25% and 75% of the updates applied [GUPS]", "{:.4f}"),
    ("gups_total", "rate over the whole run, HPCC's metric [GUPS]", "{:.4f}"),
)

#: The record's fields that measure the simulator (its wall time, speed and memory), not the model: the only
#: fields in which two runs of the same (config, seed) may differ.  ``compile_s`` is the fast engine's time
#: compiling its kernels (or loading them from Numba's cache), which ``wall_s`` leaves out.
MEASURED_KEYS = frozenset({"wall_s", "events_per_s", "peak_rss_mb", "compile_s", "threads", "parallel_efficiency"})


def model_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its :data:`MEASURED_KEYS`: what two runs of one (config, seed) share, bit for bit."""
    return {k: v for k, v in record.items() if k not in MEASURED_KEYS}


def _fmt(fmt: str, value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if isinstance(value, (int, float)) and abs(value) >= 1e15 and "," not in fmt:
        return f"{value:.4g}"  # a what-if's 1e300 s, not 300 digits
    return fmt.format(value)


def headline_lines(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The first screen's rows: GUPS with its interval, the precision against its target, the resource that
    limited the run, and how long it took (:mod:`gupsim.studies.headline`, :mod:`gupsim.studies.limiting`)."""
    h = Headline.of(record)
    gups = h.text(unit="") + (f", 95% CI after a warm-up of {record['warmup_updates']:,} updates" if h.valid else "")
    limit = Limit.of(record)
    rows = [("GUPS", gups), ("precision", h.precision_text() + _stop_text(record, h)),
            ("limited by", f"{limit.name()} ({limit.evidence()})"), ("took", _took(record))]
    return rows


def _stop_text(record: dict[str, Any], h: Headline) -> str:
    """What a run with a precision target did: stopped when precise, or ran to its cap."""
    if record.get("precision_reached"):
        return f", reached after {record['updates_applied_per_process']:,.0f} updates a process"
    if h.asked:
        return f", not reached within the cap of {record['updates_per_process']:,} updates a process"
    return ""


def _took(record: dict[str, Any]) -> str:
    """"3.1 s wall (+ 71 s compiling the fast engine's kernels)"."""
    wall, compile_s = record.get("wall_s", math.nan), record.get("compile_s", 0.0) or 0.0
    threads = record.get("threads", 1) or 1
    return f"{wall:.3g} s wall" + (f" on {threads} threads" if threads > 1 else "") + \
        (f" (+ {compile_s:.3g} s compiling or loading the fast engine's kernels)" if compile_s >= 1 else "")


def format_record(record: dict[str, Any], all_rates: bool = False) -> str:
    """The summary ``gupsim run`` prints: the headline rows first, then the run's other figures; the window's
    and the whole run's rates only with ``all_rates``."""
    record = headline_record(record)
    head = (f"{record['algorithm']} on {record['machine']} {record['shape']} {record['topology']}: "
            f"{record['processes']} processes x {record['updates_per_process']} updates"
            f"{' (cap)' if record.get('precision_target') is not None else ''}, seed {record['seed']}"
            + (f", {record['engine']} engine" if "engine" in record else ""))
    rows = [(label, _fmt(fmt, record.get(key, math.nan)))
            for key, label, fmt in (OTHER_RATES if all_rates else ()) + SUMMARY_ROWS]
    first = headline_lines(record)
    width = max(len(label) for label, _ in first + rows)
    lines = [head] + what_if_lines(record.get("what_if")) + [f"  {label:<{width}}  {value}" for label, value in first]
    lines += [f"  {label:<{width}}  {value}" for label, value in rows]
    lines += [f"  note: {note}" for note in _notes(record)]
    if "verify_errors" in record:
        verdict = "passed" if record["verify_passed"] else "FAILED"
        lines.append(f"  {'HPCC verification':<{width}}  {verdict} ({record['verify_errors']} errors "
                     f"in {record['verify_table_size']:,} words)")
    return "\n".join(lines)


def _notes(record: dict[str, Any]) -> list[str]:
    """What the reader should know before quoting the rate: an interval missing or wider than the target, a
    machine larger than any built."""
    h, notes = Headline.of(record), []
    if not h.valid:
        notes.append("no valid interval: the run did not settle within its updates (the warm-up or the drain "
                     "took most of it); give more --updates, or --precision to run until it is precise")
    elif not h.met:
        notes.append(f"the interval is wider than ±{h.target:.0%}: give more --updates (the cap) for a "
                     "narrower one")
    beyond = larger_than_built(record["machine"], record.get("nodes", 0))
    if beyond:
        notes.append(beyond)
    return notes


def what_if(sets: dict[str, Any], options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The record's ``what_if``: the machine fields ``--set`` changed (dotted names) and the ``--option``s."""
    return {"set": dict(sets), "option": dict(options)}


def what_if_lines(changes: dict[str, dict[str, Any]] | None) -> list[str]:
    """A summary's second line naming every ``--set`` and ``--option``, so that a saved summary of a what-if
    cannot pass for the unmodified machine's; nothing when there are none."""
    given = [f"--{flag} {key}={value!r}" if isinstance(value, str) else f"--{flag} {key}={value:g}"
             if isinstance(value, float) else f"--{flag} {key}={value}"
             for flag in ("set", "option") for key, value in (changes or {}).get(flag, {}).items()]
    return [f"  what-if: {' '.join(given)}"] if given else []


def format_bounds(b: dict[str, Any]) -> str:
    return "\n".join([
        f"Bounds for {b['shape']} {b['topology']} ({b['nodes']} nodes, {b['processes']} processes)",
        *what_if_lines(b.get("what_if")),
        f"  CPU bound, eq. (1)      {b['cpu_bound_gups']:.4g} GUPS  "
        f"({b['cycles_per_update']:.2f} cycles/update = {b['t_local_cycles']:g} local + (N-1)/N x "
        f"({b['t_send_cycles']:g} send + {b['t_recv_cycles']:g} recv + {b['t_packet_overhead_cycles']:g} t_o^p) "
        f"at {b['clock_hz'] / 1e6:g} MHz)",
        f"  network bound, eq. (2)  {b['network_bound_gups']:.4g} GUPS  "
        f"(alpha = {b['alpha_over_C']:g} links, b = {b['bytes_per_update']:g} B/update on the wire, "
        f"C = {b['link_bytes_per_s'] / 1e6:g} MB/s)",
        f"  network bound, paper's b {b['network_bound_gups_paper']:.4g} GUPS  "
        f"(b = {b['bytes_per_update_paper']:g}: one chunk + the paper's per-packet overhead, "
        f"the convention of seed 000 Table 2)",
        f"  bisection               {b['bisection_links']} links each way",
        f"  bottleneck              {b['bottleneck']} (one update a packet, as eq. (1) and (2) assume)",
        *_algorithm_lines(b.get("algorithm")),
    ])


def _algorithm_lines(a: dict[str, Any] | None) -> list[str]:
    """``bounds --algorithm``: the algorithm's own bounds and which binds, with the reason."""
    if not a:
        return []
    return [f"{a['algorithm']}'s own bounds (its cycles and wire bytes per update)",
            f"  CPU bound               {a['cpu_bound_gups']:.4g} GUPS  ({a['cycles_per_update']:,.1f} cycles/update)",
            f"  network bound           {a['network_bound_gups']:.4g} GUPS  ({a['bytes_per_update']:.4g} B/update on "
            f"the wire, updates a packet {a['updates_per_packet']:.3g})",
            f"  binds                   {a['binding']}: {a['reason']}"]


def machine_parameter_table(yaml_path) -> str:
    """Markdown table of a machine file's fields, values and source comments.

    Read from the YAML text itself, so the documentation cannot drift from
    the file: every ``key: value  # source`` line under a section becomes a row.
    """
    from pathlib import Path

    rows = ["| key | value | source |", "|---|---|---|"]
    parents: list[tuple[int, str]] = []  # (indent, key) of the mappings the line is inside
    for line in Path(yaml_path).read_text().splitlines():
        body, _, comment = line.partition("#")
        if not body.strip() or ":" not in body:
            continue
        key, _, value = body.partition(":")
        indent = len(key) - len(key.lstrip())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        if not value.strip():  # a section (a nested mapping's key): its fields are named under it
            parents.append((indent, key.strip()))
            continue
        name = ".".join([p for _, p in parents] + [key.strip()])
        rows.append(f"| `{name}` | `{value.strip()}` | {comment.strip()} |")
    return "\n".join(rows)


def refresh_parameter_tables(doc_path, machines_dir) -> None:
    """Rewrite every ``<!-- machine-parameters:NAME -->`` block of a Markdown file from its YAML."""
    import re
    from pathlib import Path

    path = Path(doc_path)
    pattern = re.compile(r"(<!-- machine-parameters:([\w-]+) .*?-->\n)(.*?)(\n<!-- /machine-parameters -->)", re.S)
    text = pattern.sub(
        lambda m: m.group(1) + machine_parameter_table(Path(machines_dir) / f"{m.group(2)}.yaml") + m.group(4),
        path.read_text(),
    )
    path.write_text(text)


def to_json(obj: Any) -> str:
    """``obj`` as strict JSON (RFC 8259): a number that is not finite (a rate not measured in a short run is
    NaN) is ``null``.  Python's ``json`` would write the tokens ``NaN`` and ``Infinity``, which are not JSON:
    ``jq``, JavaScript and most other readers refuse the whole record.  ``null`` says "no value", which is
    what a NaN in a record means; no record holds an infinity (``gupsim bounds`` refuses one)."""
    def default(o: Any) -> Any:
        if hasattr(o, "item"):
            return _strict(o.item())
        return str(o)

    return json.dumps(_strict(obj), default=default, sort_keys=False, allow_nan=False)


def _strict(obj: Any) -> Any:
    """``obj`` with every float that is not finite replaced by None, through dicts, lists and tuples."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strict(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:  # a NumPy scalar
        return _strict(obj.item())
    return obj
