"""The one compiled part of the package: shardcal._dtensor_search (the DTensor adapter's plan
search, pybind11 from Debian's pybind11-dev). Everything else is in pyproject.toml. The extension
is optional: without a C++ compiler or pybind11 the package still installs and
shardcal.dtensor_plan searches in Python (slower first plans; shardcal.torch warns once)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "shardcal._dtensor_search", ["shardcal/_dtensor_search.cpp"], language="c++",
    # -ffp-contract=off: no fused multiply-add, so compiled prices equal the Python ones bit for bit
    extra_compile_args=["-std=c++20", "-O2", "-fvisibility=hidden", "-ffp-contract=off", "-Wall", "-Wextra"],
    optional=True)])
