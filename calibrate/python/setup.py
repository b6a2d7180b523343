"""The one compiled part of the package: shardcal._dtensor_search (the DTensor adapter's plan
search, pybind11 from Debian's pybind11-dev). Everything else is in pyproject.toml. The extension
is optional: without a C++ compiler or pybind11 the package still installs and
shardcal.dtensor_plan searches in Python (slower first plans; shardcal.torch warns once)."""
import os

from setuptools import Extension, setup

# -ffp-contract=off: no fused multiply-add, so compiled prices equal the Python ones bit for bit
flags = ["-std=c++20", "-O2", "-fvisibility=hidden", "-ffp-contract=off", "-Wall", "-Wextra"]
if os.environ.get("CI") == "true":  # as the C++ build (SHARDCAL_WERROR): a warning fails CI's build
    flags.append("-Werror")

setup(ext_modules=[Extension("shardcal._dtensor_search", ["shardcal/_dtensor_search.cpp"], language="c++",
                             extra_compile_args=flags, optional=True)])
