"""The test oracle's Profile: the pure-Python pricing that shardcal shipped before issue 45 (the
package now prices through the C++ extension shardcal._core). Kept operation for operation as the
C++ (cost_model.py, host_transport.py, predict.py, profile_read.py beside it) so that
tests/calibrate/parity_test.py can check the C++ model against an independent reading of
docs/CALIBRATION.md "The model"; no product code imports it."""

from __future__ import annotations

from typing import Optional, Sequence

from . import host_transport as _ht
from . import predict as _predict
from shardcal.collectives import COLLECTIVES, HAS_V_FORM, ONE_WAY, TABLE, busbw_factor, ring_steps  # re-exported
from .host_transport import bandwidth_growth, known_switch  # re-exported
from .predict import Prediction, effective_bytes, table_bytes  # re-exported
from .profile_read import (DTYPE_SIZE, DTYPES, MAX_DEPTH, SCHEMA, VERSION, Model,  # re-exported
                           ProfileData, ProfileError, Segment, parse_text, read_text)

__all__ = ["COLLECTIVES", "DTYPES", "DTYPE_SIZE", "HAS_V_FORM", "MAX_DEPTH", "ONE_WAY", "SCHEMA", "TABLE",
           "VERSION", "Model", "Prediction", "Profile", "ProfileError", "Segment", "bandwidth_growth",
           "busbw_factor", "effective_bytes", "known_switch", "load", "loads", "ring_steps", "table_bytes"]


class Profile(ProfileData):
    """A checked profile (ProfileData: its fields and models, read by profile_read) and the
    predictions made from it (shardcal.predict; host transport in shardcal.host_transport)."""

    def choose_model(self, collective: str, group_size: int, hosts: int = 1, concurrent_groups: int = 1,
                     dtype: Optional[str] = None):
        """The nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"): (model, key)."""
        return _predict.choose_model(self, collective, group_size, hosts, concurrent_groups, dtype)

    def host_transport(self, best, hosts: int, ranks_per_host: int, concurrent_groups: int = 1,
                       group_size: Optional[int] = None):
        """host_transport.host_transport: the structure from the chosen model's host count to the
        query's, tested by a second measured inter-host model when there is one
        (host_transport.HostTransport), or None."""
        return _ht.host_transport(self, best, hosts, ranks_per_host, concurrent_groups, group_size)

    def predict(self, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
                nbytes: float = 0.0, counts: Sequence[int] = (), elem_size: int = 1,
                dtype: Optional[str] = None, concurrent_groups: int = 1, _check_class: bool = True) -> Prediction:
        """The price of one collective call with its 95 % interval and notes (predict.predict)."""
        return _predict.predict(self, collective, group_size, hosts, ranks_per_host, nbytes, counts, elem_size,
                                dtype, concurrent_groups, _check_class)

    def __getstate__(self):  # the price functions of time_fn are closures: rebuilt on use
        state = dict(self.__dict__)
        state.pop("_time_fns", None)
        return state
    def time_fn(self, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
                dtype: Optional[str] = None, concurrent_groups: int = 1):
        """predict(...).time_us for one link class, collective and dtype as a function of nbytes
        alone, bit-identical to predict(..., _check_class=False) (predict.time_fn, which says how)."""
        return _predict.time_fn(self, collective, group_size, hosts, ranks_per_host, dtype, concurrent_groups)

    # -- DTensor / autoparallel bridge -----------------------------------------------------
    def mesh_topo(self, mesh_shape: Sequence[int], ranks_per_host: int, collective: str = "all_gather",
                  nbytes: Optional[float] = None, dtype: Optional[str] = None) -> dict:
        """Per-mesh-dim numbers in the shape of PyTorch DTensor's MeshTopoInfo (predict.mesh_topo,
        which lists them)."""
        return _predict.mesh_topo(self, mesh_shape, ranks_per_host, collective, nbytes, dtype)


def loads(text: str, origin: str = "<string>") -> Profile:
    return Profile(parse_text(text, origin), origin)


def load(path: str) -> Profile:
    return loads(read_text(path), path)
