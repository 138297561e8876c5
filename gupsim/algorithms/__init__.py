"""Update algorithms: how processes generate, send, receive, route and apply updates.

Each algorithm is a small class behind one protocol (:class:`Algorithm`),
registered by name with :func:`register_algorithm`.  The core simulator
never branches on an algorithm's name: it builds the class the run names,
starts :meth:`Algorithm.process` once per process (MPI rank) and reads
:meth:`Algorithm.metrics` at the end.  Algorithm-specific settings are a
validated pydantic model (``Options``); an unknown option is one clear line.

Registered here: ``baseline`` (HPCC's MPI reference code, seed 000 §2 and
§6.1), ``one-packet`` (one packet per remote update, the UPC run of seed
001), ``routed`` (software routing, seed 000 §4.2), ``routed-split``
(routing and updating on separate cores of a node), ``dv`` (the
Data Vortex code of seed 003) and ``alltoall`` (HPCC 0.5b's bucket sort and MPI_Alltoall, seed 004) and
``upc`` (a remote read-modify-write per update with a window in flight, seed 004's UPC run).
"""

from gupsim.algorithms.base import (ALGORITHMS, OPTIONS_CONFIG, Algorithm, NoOptions, SimulationView,
                                    algorithm_class, available_algorithms, register_algorithm, validate_options)
# Imported for their registration alone.
from gupsim.algorithms import alltoall, baseline, dv, one_packet, routed, routed_split, upc  # noqa: F401,E402

__all__ = ["ALGORITHMS", "OPTIONS_CONFIG", "Algorithm", "NoOptions", "SimulationView", "algorithm_class",
           "available_algorithms", "register_algorithm", "validate_options"]
