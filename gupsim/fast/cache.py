"""Numba's on-disk cache, keyed on every fast-engine source file instead of one.

Numba stamps a cached function with the hash of the file that defines it.
The kernels (``one_packet.py``, ``routed.py``, ``baseline.py``) compile the
helpers of ``core.py``, ``credits.py``, ``events.py``, ``tables.py`` and
``stream.py`` into themselves, so an edit to a helper's file alone would leave
stale machine code in their cache.  The locators below stamp every function
of this package with the hash of all its kernel files together (``__init__.py``
is plain Python); functions
elsewhere keep Numba's own locators.  Imported by :mod:`gupsim.fast.tables`
(which every compiled module imports) and :mod:`gupsim.fast.stream` before
anything is compiled.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core import caching

PACKAGE_DIR = Path(__file__).resolve().parent


def _package_hash() -> bytes:
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        if path.name == "__init__.py":  # set-up code, not compiled
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.digest()


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


def install() -> None:
    classes = _numba("CacheImpl")._locator_classes
    if _UserDirLocator not in classes:
        classes[:0] = [_UserDirLocator, _InTreeLocator]


install()
