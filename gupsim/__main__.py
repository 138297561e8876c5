"""``python -m gupsim``: the ``gupsim`` script, through its entry point's guard (:mod:`gupsim.app.entry`).

The guard must come before the command line's imports (NumPy, Numba, llvmlite), which is why this module
imports only the entry point.
"""

from gupsim.app.entry import main

main()
