"""gupsim: a discrete-event simulator of torus supercomputers running HPCC RandomAccess."""

__version__ = "0.1.0"
