"""Files a user hands gupsim, read and written so that none can hang it, exhaust its memory or be destroyed.

Three rules, each one function every reader or writer calls:

* **Only regular files are read.**  A named pipe blocks ``open`` until a writer comes, forever if none
  does; a device (``/dev/zero``, ``/dev/urandom``) never ends.  :func:`regular_file` looks at what a path
  is (``os.stat``, through links) before anything opens it.
* **Every read is bounded.**  :func:`read_bytes` reads at most a limit plus one byte, so a file larger
  than any input gupsim takes is one line, not memory growing until the OOM killer ends the process.
* **Every output is written whole or not at all.**  :func:`replaced_atomically` hands the writer a
  temporary file beside the output and renames it into place only when the writer finished: a full disk,
  a file-size limit or a signal leaves the old file (or none), never a cut one under the final name.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from gupsim.base.errors import GupsimError

#: The largest input file gupsim reads (a machine, sweep or cycle-table file, a JSON record, a docs page).
#: The largest real one is a run record with per-link counters of a 65,536-node machine, about 20 MB.
MAX_INPUT_BYTES = 256 * 2**20

#: What ``stat`` calls each kind of path that is not a regular file, for the one line refusing it.
_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def kind_of(mode: int) -> str:
    """What a path whose ``st_mode`` is ``mode`` is, in words ("a named pipe")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def regular_file(path: str | os.PathLike, what: str = "") -> Path:
    """``path`` if it is a regular file (through links); else one line naming it and what it is.  A
    missing or unreadable path is left to the open that follows (its OSError names the reason)."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return path
    if not stat.S_ISREG(mode):
        label = f"{what} " if what else ""
        raise GupsimError(f"{label}{path}: cannot read: it is {kind_of(mode)}, not a regular file; give a file")
    return path


def read_bytes(path: str | os.PathLike, what: str = "", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (more is one line)."""
    path = regular_file(path, what)
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        label = f"{what} " if what else ""
        raise GupsimError(f"{label}{path}: larger than the {limit / 2**20:,.0f} MB gupsim reads from one input file")
    return data


def read_text(path: str | os.PathLike, what: str = "", limit: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_bytes` as UTF-8 text; bytes that are not UTF-8 are one line naming the offset."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GupsimError(f"{path}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})") from None


@contextmanager
def replaced_atomically(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` to write the output to; renamed onto ``path`` when the block ends
    without an exception, deleted when it raises.  An existing ``path`` that is not a regular file (a
    device, a pipe, a folder) is refused: the rename would replace it, and a write into it never ends."""
    final = Path(path)
    try:
        mode = os.stat(final).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise GupsimError(f"{final}: is {kind_of(mode)}, not a regular file; give a file name to write")
    tmp = final.parent / f".{final.name}.{os.getpid()}.tmp"
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
