"""Machine descriptions: frozen, validated parameter sets loaded from YAML.

:mod:`gupsim.config.torus` holds the torus machines' models (Blue Gene/L and /P),
:mod:`gupsim.config.switched` the switched ones (Data Vortex, InfiniBand),
:mod:`gupsim.config.kinds` which model a file's ``kind`` selects, and
:mod:`gupsim.config.loading` reading a machine by name or path with ``--set``
overrides (:mod:`gupsim.config.overrides`), strict YAML
(:mod:`gupsim.config.yaml_files`) and one-line field errors
(:mod:`gupsim.config.field_errors`).  The names below are the public API.
"""

from gupsim.data import MACHINES_DIR, REPO_ROOT, source_checkout
from gupsim.config.kinds import checked_machine, machine_kinds, validate_machine
from gupsim.config.loading import available_machines, load_machine, machine_path
from gupsim.config.switched import SwitchedMachineConfig
from gupsim.config.torus import (MAX_COUNT, CacheConfig, CpuConfig, DmaConfig, MachineConfig,
                                 MpiConfig, NetworkConfig, RawDeviceCosts)

__all__ = ["MACHINES_DIR", "MAX_COUNT", "REPO_ROOT", "source_checkout", "CacheConfig", "CpuConfig", "DmaConfig", "MachineConfig",
           "MpiConfig", "NetworkConfig", "RawDeviceCosts", "SwitchedMachineConfig", "available_machines",
           "checked_machine", "load_machine", "machine_kinds", "machine_path", "validate_machine"]
