"""The engines that run the model: the SimPy reference (:mod:`gupsim.engines.reference`), the Numba fast engine
(:mod:`gupsim.engines.fast`), what each states and does (:mod:`gupsim.engines.contract`), and the registry of engines
with one run reduced to
its record (:mod:`gupsim.engines.run`)."""
