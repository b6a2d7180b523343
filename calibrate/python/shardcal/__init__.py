"""shardcal's Python side: read calibration profiles and predict collective times.

    import shardcal.profile as sp
    prof = sp.load("configs/profiles/dtensor-default.json")
    prof.predict("all_gather", group_size=8, hosts=2, nbytes=1 << 20).time_us

`shardcal.profile` prices through the C++ cost model compiled into `shardcal._core`
(docs/PROFILE_FORMAT.md).
"""

__version__ = "0.1.0"
