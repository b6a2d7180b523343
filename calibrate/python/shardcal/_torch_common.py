"""What the DTensor adapter (torch.py, its step pricer dtensor_pricer.py) and the torch.compile
estimator (inductor.py) share: the profile's names for torch dtypes, a process group's backend, a
mesh dim's groups. Its own private module so that neither of the two imports the other for them.
torch is imported only inside the functions (this module imports without torch).
"""

from __future__ import annotations

# torch dtype -> the profile's dtype names (docs/PROFILE_FORMAT.md); others price pooled models.
DTYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int32": "i32", "int64": "i64", "uint8": "u8"}


def group_backend(dist, pg, device_type: str) -> str:
    """The backend that runs a process group's collectives on a device type ("cpu:gloo,cuda:nccl")."""
    try:
        config = str(dist.get_backend_config(pg))
    except Exception:
        return "unknown"
    per_device = dict(item.split(":", 1) for item in config.split(",") if ":" in item)
    if device_type in per_device:
        return per_device[device_type]
    return config if ":" not in config else "unknown"


def dim_groups(mesh, d: int) -> list:
    """Every process group of mesh dim d as global ranks, across the whole root mesh (a
    submesh's sibling groups run at the same time as its own)."""
    try:
        from torch.distributed._mesh_layout import _MeshLayout
        return _MeshLayout([mesh._layout[d]]).remap_to_tensor(mesh._rank_map).tolist()
    except (ImportError, AttributeError):  # this rank's mesh only
        n = int(mesh.shape[d])
        return mesh.mesh.movedim(d, -1).reshape(-1, n).tolist()
