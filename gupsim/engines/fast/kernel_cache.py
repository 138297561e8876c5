"""Numba's on-disk cache, keyed on every fast-engine source file instead of one.

Numba stamps a cached function with the hash of the file that defines it.
The kernels (``one_packet.py``, ``routed.py``, ``routed_split.py``, ``baseline.py``, ``alltoall.py``) compile the
helpers of ``core.py``, ``credits.py``, ``events.py``, ``tables.py`` and
``stream.py`` into themselves, and freeze the constants they import (from
``gupsim.engines.order`` too), so an edit to a helper's file alone would leave
stale machine code in their cache.  The locators below stamp every function
of this package with the hash of all the files its compiled code comes from
(:func:`compiled_sources`); functions elsewhere keep Numba's own locators.  Imported first by the package's
``__init__.py``, which Python runs before any module of the package, so before
any function is decorated.

Where the cache is: the folder named by ``NUMBA_CACHE_DIR`` if the user set
one, else ``gupsim/engines/fast/__pycache__`` if it is writable (a checkout, an
editable install), else the user's cache folder, ``~/.cache/gupsim/numba``
(``$XDG_CACHE_HOME`` honoured), so that a read-only install caches too.  The
last is a locator of its own rather than ``NUMBA_CACHE_DIR`` set by gupsim:
Numba reads that variable once, when it is first imported, which may be
before gupsim is.

A damaged cache file (a cut or overwritten ``.nbi`` or ``.nbc``) had made
every later run of its function fail to unpickle it until the user deleted
it.  A load that fails now deletes that function's files, says so in one
line on stderr, and the function is compiled (and cached) afresh.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from pathlib import Path

from numba.core import caching
from numba.misc.appdirs import AppDirs

PACKAGE_DIR = Path(__file__).resolve().parent
GUPSIM_DIR = PACKAGE_DIR.parents[1]


def _package_hash() -> bytes:
    digest = hashlib.sha256()
    for path in compiled_sources():
        digest.update(str(path.relative_to(GUPSIM_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.digest()


def compiled_sources() -> list[Path]:
    """The files whose text can change the machine code Numba caches: every module of this package that defines
    a compiled function, every module of gupsim those import (their constants are frozen into the code), followed
    to the end, and the two modules that shape the compile (this one and ``compiling``).  Plain Python that only
    calls the kernels (the engine, the driver, the window loop) is left out: editing it compiles nothing again."""
    todo = [path for path in PACKAGE_DIR.glob("*.py") if "@njit" in path.read_text()]
    todo += [PACKAGE_DIR / "kernel_cache.py", PACKAGE_DIR / "compiling.py"]
    sources: set[Path] = set()
    while todo:
        path = todo.pop()
        if path not in sources:
            sources.add(path)
            todo += _imported_files(path)
    return sorted(sources)


def _imported_files(path: Path) -> list[Path]:
    """The files of the gupsim modules ``path`` imports: ``from gupsim.x import y`` counts ``gupsim.x.y`` where
    that is a module, and ``gupsim.x`` where it imports a name defined there."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gupsim"):
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            modules = [name for name in subs if _module_file(name)]
            names += modules + ([node.module] if len(modules) < len(subs) else [])
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names if alias.name.startswith("gupsim")]
    return [file for file in map(_module_file, names) if file is not None]


def _module_file(name: str) -> Path | None:
    base = GUPSIM_DIR.joinpath(*name.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


class _PackageStamp:
    _stamp: bytes | None = None

    def get_source_stamp(self):
        if _PackageStamp._stamp is None:
            _PackageStamp._stamp = _package_hash()
        return _PackageStamp._stamp

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != PACKAGE_DIR:
            return None
        return super().from_function(py_func, py_file)


def _numba(name: str):
    # public names since Numba 0.60, underscored before
    return getattr(caching, name, None) or getattr(caching, "_" + name)


class _UserDirLocator(_PackageStamp, _numba("UserProvidedCacheLocator")):
    pass


class _InTreeLocator(_PackageStamp, _numba("InTreeCacheLocator")):
    pass


class _UserCacheLocator(_PackageStamp, _numba("UserWideCacheLocator")):
    """The user's cache folder, ``.../gupsim/numba``: where an install whose package folder is read-only caches."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        root = os.path.join(AppDirs(appname="gupsim", appauthor=False).user_cache_dir, "numba")
        self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(py_file))


_LOCATORS = [_UserDirLocator, _InTreeLocator, _UserCacheLocator]
_real_load_overload = caching.Cache.load_overload
_reported: set[str] = set()


def _load_or_discard(self, sig, target_context):
    """Numba's cache load; for this package's functions a file that fails to load is deleted, said in one line
    on stderr (once per folder), and taken as a miss, so the function is compiled and its cache written anew."""
    try:
        return _real_load_overload(self, sig, target_context)
    except Exception as exc:  # damaged bytes unpickle to almost any error: UnpicklingError, EOFError, ...
        if not isinstance(self._impl.locator, _PackageStamp):
            raise
        discard(self._cache_path, self._impl.filename_base)
        if self._cache_path not in _reported:
            _reported.add(self._cache_path)
            print(f"gupsim: the compiled-kernel cache at {self._cache_path} was damaged "
                  f"({type(exc).__name__} in {self._impl.filename_base}); recompiling", file=sys.stderr, flush=True)
        return None


def discard(folder: str, filename_base: str) -> None:
    """Delete one function's cache files (its index and every data file) from ``folder``."""
    for path in Path(folder).glob(f"{filename_base}.*"):
        if path.suffix in (".nbi", ".nbc"):
            path.unlink(missing_ok=True)


def install() -> None:
    classes = _numba("CacheImpl")._locator_classes
    if _UserDirLocator not in classes:
        classes[:0] = _LOCATORS
    caching.Cache.load_overload = _load_or_discard


install()
