"""The results store: every run of every sweep, one Parquet row per run.

A store is a directory::

    STORE/results.parquet     compacted rows (read it with pandas directly)
    STORE/parts/<key>.parquet one file per point finished since the last compaction

A row holds the run record's scalar measurements, what the sweep varied
(``var.<field>``), the full resolved configuration twice -- as JSON
(``config_json``, the exact input of the run) and flattened into
``cfg.<dotted.path>`` columns for filtering -- and ``key``, the point's hash
(:func:`gupsim.studies.sweep.point_key`), and ``code``, the digest of the model code
that ran it (:func:`gupsim.studies.runpool.code_digest`): a sweep reuses only rows its
own code made.  Optional record extras (per-link
counters, histograms, time series) are JSON columns.  ``status`` is ``ok`` or
``failed``; a failed row carries ``error``.

Durability: each finished point is written to a temporary file, flushed to
disk and atomically renamed into ``parts/``, so a Ctrl-C or a crash never
leaves half a row, and every point finished before it is kept.  Reading
removes only temporary files older than :data:`STALE_TMP_S`: a younger one
may be another process's write in flight.  Compaction
(at the end of a sweep and by ``gupsim results``) merges the parts into
``results.parquet`` the same way and only then removes them; a crash in
between leaves duplicates, which reading resolves by key (an ``ok`` row
beats a failed one, a later one beats an earlier one).

A store that cannot be read (not a directory, a file that is not Parquet, a
table without ``key``) is reported in one line naming the file.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from gupsim.base.errors import GupsimError, ResourceFault, probe_write
from gupsim.engines.run import resolved_config
from gupsim.base.files import read_text
from gupsim.studies.headline import headline_record
from gupsim.studies.record_check import check_record

#: A temporary part older than this was left by a write that stopped; a younger one may be in flight.
STALE_TMP_S = 600.0
#: Record entries stored as JSON text columns, not flattened (they are arrays).
JSON_EXTRAS = ("links", "histograms", "timeseries")


def _flatten(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, (list, tuple)):
            out[f"{prefix}{key}"] = json.dumps(value)
        else:
            out[f"{prefix}{key}"] = value
    return out


def _base_row(key: str, config: dict[str, Any], varied: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"key": key, "finished_unix_s": time.time()}
    row.update({f"var.{k}": (v if isinstance(v, (int, float, str, bool)) else json.dumps(v)) for k, v in varied.items()})
    row["config_json"] = json.dumps(config, sort_keys=True)
    row.update(_flatten(config, "cfg."))
    return row


def record_row(key: str, record: dict[str, Any], varied: dict[str, Any]) -> dict[str, Any]:
    """A finished run as one flat row."""
    row = _base_row(key, record["config"], varied)
    row.update({"status": "ok", "error": ""})
    for name, value in record.items():
        if name == "config":
            continue
        if name in JSON_EXTRAS:
            row[f"{name}_json"] = json.dumps(value)
        elif isinstance(value, (int, float, str, bool)) or value is None:
            row[name] = value
        else:
            row[name] = json.dumps(value, default=str)
    return row


def failed_row(key: str, run_config: Any, varied: dict[str, Any], error: str) -> dict[str, Any]:
    row = _base_row(key, resolved_config(run_config), varied)
    row.update({"status": "failed", "error": error.splitlines()[0] if error else "failed",
                "machine": run_config.machine.name, "shape": run_config.shape,
                "algorithm": run_config.algorithm, "seed": run_config.seed,
                "updates_per_process": run_config.updates_per_process})
    return row


class ResultsStore:
    """A directory of Parquet files holding one row per finished point."""

    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise GupsimError(f"results store {self.path}: not a directory (a store is a folder of Parquet files)")
        if not create and not self.path.exists():
            raise GupsimError(f"results store {self.path}: not found")
        self.parts = self.path / "parts"
        self.compacted = self.path / "results.parquet"
        if create:
            self.parts.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ writing

    def write(self, row: dict[str, Any]) -> Path:
        """Durably add one row: temp file, fsync, atomic rename."""
        final = self.parts / f"{row['key']}-{time.time_ns()}.parquet"
        try:
            _atomic_parquet(pd.DataFrame([row]), final)
        except FileNotFoundError:
            if self.parts.is_dir():
                raise
            raise ResourceFault(f"results store {self.path}: its folder {self.parts} was removed while the sweep "
                                f"ran, so point {row['key']} could not be kept; run the sweep again to redo "
                                f"the points it lost") from None
        return final

    def compact(self) -> pd.DataFrame:
        """Merge the parts into results.parquet; return the table.  A store this process may read but not
        write (another user's, a read-only disk) is read as it is, uncompacted."""
        parts = sorted(self.parts.glob("*.parquet")) if self.parts.exists() else []
        frame = self.read()
        if parts:
            try:
                _atomic_parquet(frame, self.compacted)
                for part in parts:
                    part.unlink(missing_ok=True)
            except PermissionError:
                pass  # parts left beside a compacted copy are duplicates, which reading resolves by key
        return frame

    def check_writable(self) -> None:
        """Raise the OSError a write would meet (a read-only ``parts/``), before any point runs."""
        probe_write(self.parts, f".probe.{os.getpid()}.tmp")

    # ------------------------------------------------------------------ reading

    def read(self) -> pd.DataFrame:
        frames = []
        if self.compacted.exists():
            frames.append(_read(self.compacted))
        if self.parts.exists():
            if not os.access(self.parts, os.R_OK | os.X_OK):  # glob would see nothing: not "no runs yet"
                raise GupsimError(f"results store {self.path}: cannot read {self.parts} (permission denied)")
            for tmp in self.parts.glob(".*.tmp"):  # a write interrupted before its rename ...
                try:  # ... not one in flight: another process (a running sweep) may be writing it now
                    if time.time() - tmp.stat().st_mtime > STALE_TMP_S:
                        tmp.unlink(missing_ok=True)
                except FileNotFoundError:
                    pass  # renamed by its writer meanwhile
            frames += [_read(p) for p in sorted(self.parts.glob("*.parquet"), key=lambda p: p.name.rsplit("-", 1)[-1])]
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(columns=["key", "status", "error"])
        frame = pd.concat(frames, ignore_index=True)
        # One row per key: ok beats failed, later beats earlier.
        frame["_ok"] = frame["status"].eq("ok")
        frame = frame.reset_index().sort_values(["_ok", "index"]).drop_duplicates("key", keep="last")
        return _arrow_safe(frame.sort_values("index").drop(columns=["_ok", "index"]).reset_index(drop=True))

    def done_keys(self, code: str | None = None) -> set[str]:
        """Keys of the points run without error; with ``code``, only those that code made (a row of other, or
        older, model code records what that code computed, so the point is run again)."""
        frame = self.read()
        ok = frame["status"].eq("ok")
        if code is not None:
            ok &= frame["code"].eq(code) if "code" in frame else False
        return set(frame.loc[ok, "key"])


def _read(path: Path) -> pd.DataFrame:
    try:
        open(path, "rb").close()  # the file system's own refusal first, with its errno (pyarrow's may lack it)
        frame = pd.read_parquet(path)
    except OSError as exc:
        if exc.errno is None:  # pyarrow's own "not a Parquet file" is an OSError without an errno: corrupt
            _corrupt(path, exc)
        # the file system's refusal (mode 000, an I/O error) is not damage: the file may be whole
        raise GupsimError(f"results store: {path}: cannot read ({exc.strerror or exc}); the file is kept as it "
                          "is") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds; all mean "corrupt"
        _corrupt(path, exc)
    missing = {"key", "status"} - set(frame.columns)
    if missing:
        raise GupsimError(f"results store: {path} is not a gupsim results table (no {', '.join(sorted(missing))} column)")
    return frame


def _corrupt(path: Path, exc: Exception) -> NoReturn:
    reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    raise GupsimError(f"results store: {path} is corrupt ({reason}); move it aside to re-run its points") from None


def _atomic_parquet(frame: pd.DataFrame, final: Path) -> None:
    tmp = final.parent / f".{final.name}.{os.getpid()}.tmp"
    frame = _arrow_safe(frame)
    with open(tmp, "wb") as fh:
        frame.to_parquet(fh, index=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    dir_fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns mixing types across rows (an option given as 8 in one point, 'x' in another) become text,
    and so do integers beyond Parquet's 64 bits (a failed point's seed of 10^20, kept as the user wrote it):
    pyarrow would refuse the whole row otherwise, and a failed point must still be stored."""
    frame = frame.copy()
    for col in frame.columns[frame.dtypes.eq(object)]:
        values = [v for v in frame[col] if v is not None and not (isinstance(v, float) and v != v)]
        kinds = {type(v) for v in values}
        too_wide = any(isinstance(v, int) and not -2**63 <= v < 2**64 for v in values)
        if len(kinds) > 1 or too_wide:
            frame[col] = frame[col].map(lambda v: None if v is None else str(v))
    return frame


def store_table(path: str | Path) -> pd.DataFrame:
    """The rows of an existing store (compacting it), for ``gupsim results`` and plots.

    A folder with neither ``results.parquet`` nor ``parts/`` is not a store (a sweep creates ``parts/``
    before its first point): reading it as an empty one would report "no runs yet" for a mistyped path.
    """
    store = ResultsStore(path, create=False)
    if not store.compacted.exists() and not store.parts.is_dir():
        raise GupsimError(f"results store {store.path}: not a results store (no results.parquet or parts/ in it; "
                          "gupsim sweep --store makes one)")
    return store.compact()


def load_record(source: str | Path, key: str | None = None) -> dict[str, Any]:
    """A run record from a JSON file (``gupsim run --json``) or from a store row (``key`` prefix)."""
    path = Path(source)
    if key and not path.is_dir():
        raise GupsimError(f"--key {key}: picks a run of a results store; {path} is not a store folder")
    if path.is_dir():
        table = store_table(path)
        ok = table[table["status"].eq("ok")] if "status" in table else table
        if key:
            ok = ok[ok["key"].astype(str).str.startswith(key)]
        if len(ok) != 1:
            raise GupsimError(f"{path}: {len(ok)} ok runs match key {key!r}; give --key with a unique key prefix")
        row = ok.iloc[0].to_dict()
        for name in ("links", "histograms", "timeseries"):
            text = row.pop(f"{name}_json", None)
            if isinstance(text, str):
                row[name] = json.loads(text)
        check_record(row, f"{path} (key {row.get('key', key)})")
        return headline_record(row)
    if not path.exists():
        raise GupsimError(f"record not found: {path} (a JSON record from 'gupsim run --json' or a results store)")
    try:
        record = json.loads(read_text(path, "record"))  # a pipe or a device refused, a huge file bounded
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GupsimError(f"{path}: not a JSON run record ({exc})") from None
    except OSError as exc:
        raise GupsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(record, dict) or "gups" not in record:
        raise GupsimError(f"{path}: not a gupsim run record (no 'gups' field)")
    check_record(record, str(path))
    return headline_record(record)
