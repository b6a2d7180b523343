"""The one compiled part of the package: shardcal._dtensor_search (the DTensor adapter's plan
search, pybind11: Debian's pybind11-dev headers, or the pybind11 package when importable). Everything
else is in pyproject.toml. The extension is optional: without a C++ compiler or pybind11 the package
still installs and shardcal.dtensor_plan searches in Python (slower first plans; shardcal.torch
warns once). CI=true or SHARDCAL_REQUIRE_EXT=1 make it required, so a failed build fails the install
and shows the compiler's error."""
import os

from setuptools import Extension, setup

required = os.environ.get("CI") == "true" or os.environ.get("SHARDCAL_REQUIRE_EXT") == "1"
# -ffp-contract=off: no fused multiply-add, so compiled prices equal the Python ones bit for bit
flags = ["-std=c++20", "-O2", "-fvisibility=hidden", "-ffp-contract=off", "-Wall", "-Wextra"]
if os.environ.get("CI") == "true":  # as the C++ build (SHARDCAL_WERROR): a warning fails CI's build
    flags.append("-Werror")
include = []
try:  # a pip-installed pybind11; Debian's pybind11-dev is on the default include path
    import pybind11
    include.append(pybind11.get_include())
except ImportError:
    pass

setup(ext_modules=[Extension("shardcal._dtensor_search", ["shardcal/_dtensor_search.cpp"], language="c++",
                             include_dirs=include, extra_compile_args=flags, optional=not required)])
