"""The package's compiled core, shardcal._core (pybind11: Debian's pybind11-dev headers, or the
pybind11 package when importable; nlohmann/json from Debian's nlohmann-json3-dev): the C++ cost
model that `shardbench` prices with, compiled from the repository's own sources (calibrate/src,
core/src, formats/src; the list below), with the DTensor adapter's plan search
(shardcal/_dtensor_search.cpp) in the same module, so Python prices through the same functions as
C++ (docs/CALIBRATION.md "The model"). Everything else is in pyproject.toml.

The extension is required: shardcal.profile imports it, so without a C++20 compiler, python3-dev,
pybind11-dev or nlohmann-json3-dev (bash scripts/setup.sh installs them) the install fails with the
compiler's error. The package is installed editable from this checkout (scripts/python-env.sh): the
sources outside calibrate/python are found through this file's location."""
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
# What predict(), the profile reader and the cost model need, and nothing of the fitter or the
# backends. Relative to this directory (setuptools' editable install rejects absolute paths).
CPP = ["calibrate/src/profile_read.cpp", "calibrate/src/cost_model.cpp", "calibrate/src/host_transport.cpp",
       "calibrate/src/predict.cpp", "calibrate/src/pricing_api.cpp",
       "core/src/collectives.cpp", "core/src/communicator.cpp", "core/src/dtype.cpp",
       "formats/src/json.cpp", "formats/src/json_cursor.cpp"]
SOURCES = ["shardcal/_core.cpp", "shardcal/_dtensor_search.cpp"] + [os.path.join("..", "..", p) for p in CPP]
missing = [p for p in SOURCES if not os.path.exists(os.path.join(HERE, p))]
if missing:
    raise SystemExit(f"shardcal setup.py: the C++ sources {missing} are missing: install the package from a "
                     "shardcal checkout (pip install -e calibrate/python; bash scripts/python-env.sh)")
# -ffp-contract=off: no fused multiply-add, as the C++ build (bit-identical prices with shardbench's)
flags = ["-std=c++20", "-O2", "-fvisibility=hidden", "-ffp-contract=off", "-Wall", "-Wextra"]
if os.environ.get("CI") == "true":  # as the C++ build (SHARDCAL_WERROR): a warning fails CI's build
    flags.append("-Werror")
include = [os.path.join(REPO, d, "include") for d in ("calibrate", "core", "formats")] + [os.path.join(HERE, "shardcal")]
try:  # a pip-installed pybind11; Debian's pybind11-dev is on the default include path
    import pybind11
    include.append(pybind11.get_include())
except ImportError:
    pass



class BuildExt(build_ext):
    """build_ext with the objects of ../../x.cpp under the build directory (distutils would join
    the ".." into the object's path and write it outside)."""

    def build_extension(self, ext):
        names = self.compiler.object_filenames

        def inside(sources, strip_dir=0, output_dir=""):
            return names([s.replace("..", "up") for s in sources], strip_dir, output_dir)

        self.compiler.object_filenames = inside
        try:
            super().build_extension(ext)
        finally:
            self.compiler.object_filenames = names


setup(ext_modules=[Extension("shardcal._core", SOURCES, language="c++", include_dirs=include,
                             extra_compile_args=flags)], cmdclass={"build_ext": BuildExt})
