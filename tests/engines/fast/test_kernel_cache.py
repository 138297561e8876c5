"""The kernel cache's stamp (gupsim.engines.fast.kernel_cache): every file compiled code comes from, and only those."""

from __future__ import annotations

from gupsim.engines.fast import kernel_cache


def _names() -> set[str]:
    return {str(path.relative_to(kernel_cache.GUPSIM_DIR)) for path in kernel_cache.compiled_sources()}


def test_the_stamp_covers_every_file_compiled_code_comes_from():
    """The kernels, their helpers, and the modules outside the package whose constants are frozen into them."""
    names = _names()
    for kernel in ("routed", "baseline", "one_packet", "routed_split", "core", "events", "tables", "dma"):
        assert f"engines/fast/{kernel}.py" in names, kernel
    assert {"engines/order.py", "engines/router_rules.py", "engines/fast/compiling.py"} <= names


def test_plain_python_that_calls_the_kernels_is_not_in_the_stamp():
    """Editing the engine, the driver or the window loop compiles nothing again."""
    names = _names()
    for module in ("engine", "driver", "windows", "__init__"):
        assert f"engines/fast/{module}.py" not in names, module
