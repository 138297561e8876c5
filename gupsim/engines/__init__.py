"""The engines that run the model: the SimPy reference (:mod:`gupsim.engines.reference`), the Numba fast engine
(:mod:`gupsim.engines.fast`), which one runs a configuration (:mod:`gupsim.engines.choose`), and one run reduced to
its record (:mod:`gupsim.engines.run`)."""
