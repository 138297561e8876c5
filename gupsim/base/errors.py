"""User-facing errors.

Every mistake a user can make (a misspelt config key, an impossible torus
shape, an unknown algorithm) is raised as :class:`GupsimError` with a single
line that says what is wrong and where.  The CLI prints that line and exits
with status 2; it never shows a traceback from inside SimPy or pydantic.
"""

from __future__ import annotations

import errno
from pathlib import Path


class GupsimError(Exception):
    """An error caused by the user's input; its message is one readable line."""

    #: The CLI's exit status: 2 for bad input.
    exit_code = 2


class ResourceFault(GupsimError):
    """A fault of the environment rather than of the input (memory exhausted during a run, a full disk, a
    store removed under a sweep): one line, as bad input is, but exit status 1, since the same command may
    succeed elsewhere or later."""

    exit_code = 1


#: Characters of a value an error message echoes: a value can be megabytes (a YAML alias bomb, a path).
CLIP_CHARS = 80


def clip(value: object, limit: int = CLIP_CHARS) -> str:
    """``value`` as text, cut to about ``limit`` characters with the length it had, for an error message: its
    start and its end, which for a path is the name."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-(limit // 4):]} ({len(text):,} characters)"


#: errno values meaning the environment failed a write or read (exit status 1), not that the path given was
#: wrong: a full disk, a quota, a file-size limit, an I/O error.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO, errno.ENOMEM})


def cannot_write(what: str, path: Path | str, exc: OSError) -> GupsimError:
    """One line for an output that cannot be written: which folder on its path is a file, or the OS's reason
    (a read-only place, a full disk)."""
    blocker = next((p for p in Path(path).parents if p.exists() and not p.is_dir()), None)
    why = f"{blocker} is a file, not a folder" if blocker is not None else exc.strerror or str(exc)
    # a full disk, a quota or a file-size limit is the environment's fault (exit 1), not the path's (exit 2)
    cls = ResourceFault if blocker is None and exc.errno in ENVIRONMENT_ERRNOS else GupsimError
    return cls(f"{what} {path}: {why}")


def probe_write(folder: Path, name: str) -> None:
    """Make ``folder``, then write and delete the empty file ``name`` in it: the OSError a real write there
    would meet (a folder that is a file, a read-only place), raised before any work depends on the write."""
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / name
    probe.touch()
    probe.unlink()


class UnknownNameError(GupsimError):
    """A name (machine, algorithm, topology, ...) that is not registered."""

    def __init__(self, kind: str, name: str, valid: list[str] | tuple[str, ...]):
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid choices: {', '.join(self.valid)}")


class SimulationError(Exception):
    """A broken model invariant (e.g. more than 1024 pending updates); a bug, not bad input."""


class DeadlockError(GupsimError):
    """The simulated machine stopped with work left: every process waits on another.

    A property of the configuration (for example a torus without deadlock
    avoidance), so it is reported as one line naming the waiting processes.
    """

    @classmethod
    def report(cls, now_s: float, waiting: list[int], in_network: int, applied: int, total: int,
               hint: str = "") -> "DeadlockError":
        """The one line both engines give: when, who waits, what is stuck, how far the run got."""
        shown = ", ".join(map(str, waiting[:8])) + (", ..." if len(waiting) > 8 else "")
        who = ("every process waits on another" if not waiting else
               f"1 process waits on the others (rank {shown})" if len(waiting) == 1 else
               f"{len(waiting)} processes wait on each other (ranks {shown})")
        return cls(f"deadlock at t={now_s:.6g} s: {who}; {in_network} packets stuck in the network, "
                   f"{applied:,} of {total:,} updates applied{hint}")
