"""Pictures made from the results store or from one run record (PNG and SVG).

* :func:`plot_scaling`: GUPS against machine size, log-log, one line per
  algorithm (and per anything else the sweep varied), with the CPU bound
  (eq. 1) and the network bound (eq. 2) of seed 000 §3 drawn from
  :mod:`gupsim.model.bounds` for the same machine configurations;
* :func:`plot_links`: the load on the torus links (seed 000 §5.1) -- for one
  z-slice, a heat map of each dimension's +/- links leaving every node, and
  the busiest links of the whole machine;
* :func:`plot_histograms`: updates per packet and per message (the
  baseline's bucket sizes, seed 000 §4.1);
* :func:`plot_timeseries`: injection throttling and the send-blocking factor
  (seed 000 §6.1) over simulated time.

The last three need a record made with the matching extra
(:mod:`gupsim.engines.reference.telemetry`); a record without it is one line of error saying
which option to turn on.  Nothing here computes a model number of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import (BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError,
                      field_validator, model_validator)

from gupsim.base.errors import GupsimError
from gupsim.studies.figures import UNITS, pyplot, readable, save_figure
from gupsim.app.rate_quality import axis_label, face_colour, is_steady, transient_legend
from gupsim.studies.store import load_record, store_table
from gupsim.studies.headline import headline_table
from gupsim.studies.record_check import check_rows
from gupsim.model.bounds import bounds
from gupsim.config.kinds import validate_machine
from gupsim.base.errors import UnknownNameError

DIM_NAMES = "xyz"






# --------------------------------------------------------------------------- record sections

#: A finite number (JSON has no NaN, but Python's json module reads and writes it).
_Finite = Annotated[float, Field(allow_inf_nan=False)]
_Coords = tuple[NonNegativeInt, NonNegativeInt, NonNegativeInt]


class _Columns(BaseModel):
    """A record section stored as equal-length columns (gupsim.engines.reference.telemetry); other columns pass unchecked."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _rows(self) -> "_Columns":
        lengths = {len(getattr(self, name)) for name in type(self).model_fields}
        if len(lengths) > 1:
            raise ValueError(f"columns {', '.join(type(self).model_fields)} differ in length")
        if lengths == {0}:
            raise ValueError("no rows")
        return self


class LinkColumns(_Columns):
    """``links``: one entry per directed link, as :func:`gupsim.engines.reference.telemetry.link_table` writes them."""

    src: list[_Coords]
    dst: list[_Coords]
    dim: list[Literal[0, 1, 2]]
    dir: list[Literal[-1, 1]]
    utilisation: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]]


class Histograms(BaseModel):
    """``histograms``: value -> count, for updates per packet and per message."""

    model_config = ConfigDict(extra="allow")
    updates_per_packet: dict[_Finite, PositiveInt]
    updates_per_message: dict[_Finite, PositiveInt]

    @field_validator("updates_per_packet", "updates_per_message")
    @classmethod
    def _counted(cls, counts: dict) -> dict:
        if not counts:  # records made by code that missed BG/P's and the switched fabrics' packets hold empty ones
            raise ValueError("empty: no packet was counted, so there is nothing to draw; "
                             "make the record again with --histograms")
        return counts


class TimeSeries(_Columns):
    """``timeseries``: one entry per sample of :class:`gupsim.engines.reference.telemetry.Telemetry`."""

    t_s: list[_Finite]
    sbf_interval: list[_Finite]
    sbf_cumulative: list[_Finite]
    throttled_fraction: list[_Finite]


def _section(record: dict[str, Any], name: str, option: str, model: type[BaseModel],
             where: str = "this record") -> Any:
    """The record's section ``name``, checked against ``model`` so that a malformed one is a line naming
    the file and the section, not a traceback from pandas or matplotlib half way through a figure."""
    value = record.get(name)
    if not value:
        raise GupsimError(f"{where} has no {name}; make it with {option}")
    try:
        model.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        if err["type"] == "model_type":  # pydantic's own words would name the model class
            msg = f"expected an object with {', '.join(model.model_fields)}"
        else:  # a validator's own ValueError says it in the user's terms, without pydantic's "Value error, "
            msg = str(err["ctx"]["error"]) if err["type"] == "value_error" else err["msg"]
        raise GupsimError(f"{where}: {name}{loc}: {msg}") from None
    return value


# --------------------------------------------------------------------------- sources


def _title(record: dict[str, Any]) -> str:
    return f"{record.get('machine', '?')} {record.get('shape', '?')}, {record.get('algorithm', '?')}"


# --------------------------------------------------------------------------- scaling


def plot_scaling(table: pd.DataFrame, out_dir: Path, stem: str = "gups-scaling", source: str | None = None,
                 **_: Any) -> list[Path]:
    """GUPS vs nodes, log-log, with eq. (1) and eq. (2) for every machine configuration in the table."""
    ok = table[table["status"].eq("ok")].copy() if "status" in table else table.copy()
    if ok.empty or "gups" not in ok:
        raise GupsimError("no finished runs to plot (the store has no row with status ok)")
    # The series are what differs between the runs' own configurations (cfg.*), not what a sweep file said it
    # varied (var.*): a store may hold the rows of several files, whose var.* columns are blank in each other.
    same_point = ("cfg.seed", "cfg.shape", "cfg.algorithm", "cfg.machine.description")
    others = [c for c in ok.columns if c.startswith("cfg.") and c not in same_point
              and ok[c].astype(str).nunique() > 1]
    ok[others] = ok[others].astype(str).replace({"nan": "-", "None": "-"})  # text: rows may mix numbers and text
    series = ["algorithm"] + others
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    # Colour: what else varied (e.g. the link rate); marker and line style: the algorithm.
    colour_of = {v: f"C{i}" for i, v in enumerate(sorted({tuple(r) for r in ok[others].itertuples(index=False)}))}
    marker_of = {a: ("o", "s", "^", "D", "v")[i % 5] for i, a in enumerate(sorted(ok["algorithm"].unique()))}
    ok["_steady"] = [is_steady(row) for _, row in ok.iterrows()]
    for label, group in ok.groupby(series, sort=True):
        label = label if isinstance(label, tuple) else (label,)
        _draw_series(ax, group, ", ".join([str(label[0])] + [f"{s.rsplit('.', 1)[-1]}={readable(s, v)}"
                                                               for s, v in zip(others, label[1:])]),
                     marker_of[label[0]], colour_of[tuple(label[1:])])
    # Bounds: one network curve per distinct machine (they differ when links were swept).  Eq. (2) is drawn with
    # one update per packet, as seed 000 §5.2 evaluates it; an algorithm that packs several updates into a
    # packet puts fewer wire bytes on the links per update, so its own bound is higher and its points may
    # lie above the line: the legend names those algorithms (their own bound is network_bound_gups).
    packers = _packers(ok)
    machines = ok.assign(_m=ok["config_json"].map(lambda s: json.dumps(json.loads(s)["machine"], sort_keys=True)))
    several = machines["_m"].nunique() > 1
    for i, (mjson, group) in enumerate(machines.groupby("_m", sort=True)):
        machine = validate_machine(json.loads(mjson), "results store")
        rows = sorted({(int(n), s) for n, s in zip(group["nodes"], group["shape"])})
        b = [bounds(machine, shape) for _, shape in rows]
        nodes = [n for n, _ in rows]
        colour = colour_of.get(tuple(group[others].iloc[0]), "0.4") if several else "0.4"
        ax.plot(nodes, [x.network_bound_gups for x in b], ls="--", color=colour, alpha=0.7,
                label=f"network bound, eq. (2), {machine.network.link_bytes_per_s / 1e6:g} MB/s links, "
                      f"one update per packet")
        if i == 0:
            ax.plot(nodes, [x.cpu_bound_gups for x in b], ls=":", color="k", lw=2, label="CPU bound, eq. (1)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(pyplot().matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("machine size (nodes)")
    ax.set_ylabel(axis_label(row for _, row in ok.iterrows()))
    ax.set_title(f"{', '.join(sorted(ok['machine'].astype(str).unique())) if 'machine' in ok else 'GUPS'}: "
                 f"GUPS against machine size" + (f"\n{Path(source).name}" if source else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles.append(plt.matplotlib.lines.Line2D([], [], ls="-", marker="|", color="0.3", markersize=10,
                                               label="error bars: every seed's 95% interval and the seeds' spread"))
    if packers:
        handles.append(plt.matplotlib.lines.Line2D([], [], ls="none", label=packers))
    transient = transient_legend(row for _, row in ok.iterrows())
    if transient:
        handles.append(plt.matplotlib.lines.Line2D([], [], ls="none", marker="o", mfc="none", color="0.3",
                                                   label=transient))
    ax.legend(handles=handles, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save_figure(fig, out_dir, stem, source=source)


def plot_whatif(table: pd.DataFrame, out_dir: Path, x: str | None = None, stem: str = "gups-whatif",
                source: str | None = None, **_: Any) -> list[Path]:
    """GUPS against the field ``x`` a sweep varied, one series per algorithm and shape (seeds pooled): each
    point the seeds' mean headline rate, its bar every seed's 95% interval; beside each series, dashed, its
    own eq. (2) bound (the run's wire bytes per update, ``network_bound_gups``) and, dotted, eq. (1)."""
    ok = table[table["status"].eq("ok")].copy() if "status" in table else table.copy()
    if ok.empty:
        raise GupsimError("no finished runs to plot (the store has no row with status ok)")
    if not x or x not in ok:
        fields = sorted(c for c in ok.columns if c.startswith("var.") or c.startswith("cfg."))
        raise GupsimError(f"--x {x}: not a field of the store (its fields: {', '.join(fields)})")
    ok["_x"] = pd.to_numeric(ok[x], errors="coerce")
    if ok["_x"].isna().any():
        raise GupsimError(f"--x {x}: its values are not all numbers")
    valid = ok.get("precision", pd.Series("", index=ok.index)).eq("ok")
    ok["_lo"] = ok["gups"].where(~valid, ok.get("gups_ci_low", ok["gups"]))
    ok["_hi"] = ok["gups"].where(~valid, ok.get("gups_ci_high", ok["gups"]))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    cpu_drawn: set[str] = set()
    for i, ((algorithm, shape), group) in enumerate(ok.groupby(["algorithm", "shape"], sort=True)):
        by_x = group.groupby("_x")
        mean, low, high = by_x["gups"].mean(), by_x["_lo"].min(), by_x["_hi"].max()
        colour = f"C{i % 10}"
        ax.errorbar(mean.index, mean, yerr=[mean - low, high - mean], marker="o", capsize=3, color=colour,
                    label=f"{algorithm}, {shape}")
        if "network_bound_gups" in group:
            ax.plot(mean.index, by_x["network_bound_gups"].mean(), ls="--", color=colour, alpha=0.7,
                    label=f"{algorithm}, {shape}: its eq. (2) bound (its own wire bytes per update)")
        if shape not in cpu_drawn:  # eq. (1) is the shape's, the same for every algorithm
            cpu_drawn.add(shape)
            machines = [validate_machine(json.loads(j)["machine"], "results store")
                        for j in by_x["config_json"].first()]
            ax.plot(mean.index, [bounds(m, shape).cpu_bound_gups for m in machines], ls=":", color="0.3", lw=1.5,
                    label=f"{shape}: CPU bound, eq. (1)")
    name = x.rsplit(".", 1)[-1]
    unit = next((u for ending, _, u in UNITS if name.endswith(ending)), "")
    scale = next((k for ending, k, _ in UNITS if name.endswith(ending)), 1.0)
    ax.xaxis.set_major_formatter(plt.matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / scale:g}"))
    ax.set_xlabel(f"{name}" + (f" ({unit})" if unit else ""))
    ax.set_ylabel("GUPS (10$^9$ updates/s), bars: each seed's 95% interval")
    ax.set_yscale("log")
    ax.set_title(f"GUPS against {name}" + (f"\n{Path(source).name}" if source else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save_figure(fig, out_dir, stem, source=source)


def _packers(ok: pd.DataFrame) -> str:
    """The legend's note on which drawn algorithms the one-update-per-packet bound does not bind."""
    if "updates_per_packet" not in ok:
        return ""
    per_packet = ok.groupby("algorithm")["updates_per_packet"].mean()
    several = per_packet[per_packet > 1.5]
    if several.empty:
        return ""
    return (f"({', '.join(f'{a}: {v:.0f}' for a, v in several.items())} updates per packet,\n"
            f" so fewer wire bytes per update and a higher eq. (2) bound)")


def _draw_series(ax: Any, group: pd.DataFrame, name: str, marker: str, colour: str) -> None:
    """One series: the mean over seeds, with error bars spanning the seeds' range and every seed's 95% interval
    where its record has a valid one (``precision`` ok); markers hollow where the rate is not a steady-state
    one (filled over where a series mixes the two)."""
    valid = group.get("precision", pd.Series("", index=group.index)).eq("ok")
    group = group.assign(_lo=group["gups"].where(~valid, group.get("gups_ci_low", group["gups"])),
                         _hi=group["gups"].where(~valid, group.get("gups_ci_high", group["gups"])))
    by_nodes = group.groupby("nodes")
    stats = by_nodes["gups"].agg(["mean"]).sort_index()
    stats["min"] = np.minimum(by_nodes["gups"].min(), by_nodes["_lo"].min()).reindex(stats.index)
    stats["max"] = np.maximum(by_nodes["gups"].max(), by_nodes["_hi"].max()).reindex(stats.index)
    steady = by_nodes["_steady"].all().reindex(stats.index).to_numpy()
    ax.errorbar(stats.index, stats["mean"], yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                marker=marker, mfc=face_colour(bool(steady.all()), colour), ls="-" if marker == "o" else "-.",
                capsize=3, color=colour, label=name)
    if steady.any() and not steady.all():
        ax.plot(stats.index[steady], stats["mean"][steady], ls="none", marker=marker, color=colour)


# --------------------------------------------------------------------------- links


def plot_links(record: dict[str, Any], out_dir: Path, z_slice: int = 0, top: int = 12,
               stem: str = "link-load", where: str = "this record", source: str | None = None,
               **_: Any) -> list[Path]:
    links = pd.DataFrame(_section(record, "links", "--links (gupsim run) or record: {links: true} (sweep)",
                                  LinkColumns, where))
    src = np.array(links["src"].tolist())
    dims = src.max(axis=0) + 1
    if not 0 <= z_slice < dims[2]:
        raise GupsimError(f"--z {z_slice}: the machine has z = 0..{dims[2] - 1}")
    links["util_pct"] = 100 * links["utilisation"]
    plt = pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(15, 6.5), gridspec_kw={"width_ratios": [1, 1, 1, 1.4]})
    vmax = max(float(links["util_pct"].max()), 1e-9)
    in_slice = src[:, 2] == z_slice
    image, missing = None, False
    for row, direction in enumerate((1, -1)):
        for d in range(3):
            ax = axes[row, d]
            grid = np.full((dims[1], dims[0]), np.nan)
            sel = in_slice & (links["dim"].to_numpy() == d) & (links["dir"].to_numpy() == direction)
            for (x, y, _), u in zip(src[sel], links["util_pct"].to_numpy()[sel]):
                grid[y, x] = u
            missing |= bool(np.isnan(grid).any())
            image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=vmax, aspect="auto")
            ax.set_title(f"{DIM_NAMES[d]}{'+' if direction > 0 else '-'} links, z={z_slice}", fontsize=9)
            ax.set_xticks(range(dims[0]))
            ax.set_yticks(range(dims[1]))
            ax.set_xlabel("x (node coordinate)", fontsize=8)
            ax.set_ylabel("y (node coordinate)", fontsize=8)
    fig.subplots_adjust(hspace=0.45, wspace=0.4)
    fig.colorbar(image, ax=axes[:, :3], label="link utilisation (% of run time busy)")
    if missing:  # a mesh's edge nodes lack the links that would wrap round
        fig.text(0.02, 0.01, "white: no such link (a mesh's edge node has no link leaving it that way)",
                 fontsize=8)
    busiest = links.sort_values("util_pct", ascending=False).head(top)
    for row in (0, 1):
        axes[row, 3].axis("off")
    ax = fig.add_subplot(1, 4, 4)
    names = [f"{tuple(s)}→{tuple(t)}" for s, t in zip(busiest["src"], busiest["dst"])]
    ax.barh(range(len(busiest)), busiest["util_pct"], color=[f"C{d}" for d in busiest["dim"]])
    ax.set_yticks(range(len(busiest)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("link utilisation (% of run time busy)")
    ax.set_title(f"busiest {len(busiest)} links, whole machine", fontsize=9)
    patch = plt.matplotlib.patches.Patch
    ax.legend(handles=[patch(color=f"C{d}", label=f"{DIM_NAMES[d]} link") for d in range(3)], fontsize=7,
              ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    fig.suptitle(f"Link load: {_title(record)}")
    return save_figure(fig, out_dir, stem, source=source)


# --------------------------------------------------------------------------- histograms


def plot_histograms(record: dict[str, Any], out_dir: Path, stem: str = "bucket-sizes", where: str = "this record",
                    source: str | None = None, **_: Any) -> list[Path]:
    hist = _section(record, "histograms", "--histograms (gupsim run) or record: {histograms: true} (sweep)",
                    Histograms, where)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, name, xlabel in ((axes[0], "updates_per_message", "updates per message (bucket size when sent)"),
                             (axes[1], "updates_per_packet", "updates per packet")):
        counts = {float(k): v for k, v in hist[name].items()}
        if counts:
            xs = sorted(counts)
            width = min(np.diff(xs)) * 0.8 if len(xs) > 1 else 0.8
            ax.bar(xs, [counts[x] for x in xs], width=width)
            mean = sum(x * c for x, c in counts.items()) / sum(counts.values())
            ax.axvline(mean, color="k", ls="--", label=f"mean {mean:.2f}")
            ax.legend()
        ax.set_xlabel(xlabel)
        ax.set_ylabel("count (messages)" if "message" in name else "count (packets)")
    fig.suptitle(f"Distributions: {_title(record)}")
    return save_figure(fig, out_dir, stem, source=source)


# --------------------------------------------------------------------------- time series


def plot_timeseries(record: dict[str, Any], out_dir: Path, stem: str = "throttling", where: str = "this record",
                    source: str | None = None, **_: Any) -> list[Path]:
    ts = pd.DataFrame(_section(record, "timeseries", "--sample-interval-s (gupsim run) or record: "
                               "{sample_interval_s: ...} (sweep)", TimeSeries, where))
    t_us = ts["t_s"] * 1e6
    plt = pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    axes[0].plot(t_us, ts["sbf_interval"], label="SBF in each interval")
    axes[0].plot(t_us, ts["sbf_cumulative"], ls="--", label="SBF since start")
    axes[0].set_ylabel("SBF (blocked / attempted sends)")
    axes[0].legend(fontsize=8)
    axes[1].plot(t_us, 100 * ts["throttled_fraction"], color="C3")
    axes[1].set_ylabel("throttled processes (%)")
    axes[1].set_title("processes whose injection FIFO cannot take a full packet", fontsize=9)
    axes[1].set_xlabel("simulated time (µs)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Injection throttling and SBF: {_title(record)}")
    return save_figure(fig, out_dir, stem, source=source)


def _store_rows(source: str | Path, key: str | None) -> pd.DataFrame:
    """The store's rows; with ``key``, those whose key starts with it (never the whole store silently)."""
    table = store_table(source)
    check_rows(table, source)
    table = headline_table(table)
    if key:
        table = table[table["key"].astype(str).str.startswith(key)]
        if not table["status"].eq("ok").any():
            raise GupsimError(f"{source}: no ok run has a key starting with {key!r}")
    return table


#: kind -> (what it is drawn from, how, the file name's ending)
PLOTS = {
    "scaling": (_store_rows, plot_scaling, "gups-scaling"),
    "whatif": (_store_rows, plot_whatif, "gups-whatif"),
    "links": (load_record, plot_links, "link-load"),
    "histograms": (load_record, plot_histograms, "bucket-sizes"),
    "timeseries": (load_record, plot_timeseries, "throttling"),
}
#: An ``--out`` ending in one of these names the file (its sibling of the other type is written too).
FIGURE_SUFFIXES = (".png", ".svg")


def output_place(kind: str, source: str | Path, out: Path, key: str | None = None) -> tuple[Path, str]:
    """Where figure ``kind`` of ``source`` goes: ``out`` itself when it names a .png or .svg file, else
    ``out/<source's name>[-<key>]-<kind's name>``, so the plots of two stores or records never share a name."""
    if out.suffix.lower() in FIGURE_SUFFIXES:
        return out.parent, out.stem
    name = Path(source).name.removesuffix(".store").removesuffix(".json") or "plot"
    return out, "-".join([name] + ([key] if key else []) + [PLOTS[kind][2]])


def made_from(path: Path) -> str | None:
    """The ``Source`` a figure file was stamped with by :func:`save_figure`; None when it has none."""
    import html
    import re

    try:
        if path.suffix == ".png":
            from PIL import Image

            with Image.open(path) as image:
                return image.text.get("Source")
        found = re.search(r"<dc:source>(.*?)</dc:source>", path.read_text(errors="replace"), re.S)
    except OSError as exc:
        if exc.errno is not None:  # the file system's error; PIL's "not an image" has none
            raise GupsimError(f"cannot read {path} to see what it was drawn from: {exc.strerror}") from None
        raise GupsimError(f"{path} exists and is not a figure gupsim made ({exc}); move it aside or give "
                          "--out another name") from None
    except Exception as exc:  # a damaged or foreign image: PIL's errors vary by format
        raise GupsimError(f"{path} exists and is not a figure gupsim made ({exc}); move it aside or give "
                          "--out another name") from None
    return html.unescape(found.group(1)) if found else None


def _refuse_another_sources(out_dir: Path, stem: str, source: str) -> None:
    """A figure already at the place, drawn from another source (or by something else), is not replaced."""
    for path in (out_dir / f"{stem}{suffix}" for suffix in FIGURE_SUFFIXES):
        if path.exists() and (other := made_from(path)) != source:
            raise GupsimError(f"{path} was drawn from {other or 'something else'}, not {source}; "
                              "give --out another name, or delete it to replace it")


def draw(kind: str, source: str | Path, out: Path, key: str | None = None, **options: Any) -> list[Path]:
    """Draw figure ``kind`` from ``source`` (a store folder or a JSON record) at :func:`output_place`;
    return the files.  A figure there from another source is refused in one line, not overwritten."""
    if kind not in PLOTS:
        raise UnknownNameError("plot", kind, list(PLOTS))
    load, make, _ = PLOTS[kind]
    where = f"{source}" + (f" (key {key})" if key else "")
    out_dir, stem = output_place(kind, source, Path(out), key)
    stamp = str(Path(source).resolve()) + (f" (key {key})" if key else "")
    _refuse_another_sources(out_dir, stem, stamp)
    return make(load(source, key), out_dir, where=where, stem=stem, source=stamp, **options)
