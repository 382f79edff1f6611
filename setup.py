"""Builds libclnorm with the project's CMake and ships it inside the package `clnorm`.

Everything else is in pyproject.toml. The C build is configured in <build_base>/cmake with
tests and bench off and builds only the library target (a few seconds); extra configure
arguments come from CLNORM_PY_CMAKE_ARGS (not scripts/test.sh's CLNORM_CMAKE_ARGS, which may
ask for sanitizers, whose runtime a Python process cannot load late). setuptools' own build tree is
build-py/setuptools, away from the CMake tree `build/` that scripts/test.sh uses.
"""
import glob
import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def header_version():
    """The version lives in include/clnorm.h alone; CMake reads it from there, and so do we."""
    with open(os.path.join(ROOT, "include", "clnorm.h"), encoding="utf-8") as f:
        text = f.read()
    parts = [re.search(r"#define CLNORM_VERSION_%s (\d+)" % p, text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def build_library(build_dir):
    """Configures and builds the clnorm library target; returns the path of the shared
    library (its SONAME file, symlinks resolved)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("clnorm: building the package needs cmake (scripts/setup.sh installs "
                           "it on Debian/Ubuntu)")
    extra = os.environ.get("CLNORM_PY_CMAKE_ARGS", "").split()
    subprocess.check_call([cmake, "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                           "-DCLNORM_BUILD_TESTS=OFF", "-DCLNORM_BUILD_BENCH=OFF"] + extra)
    jobs = str(os.cpu_count() or 2)
    subprocess.check_call([cmake, "--build", build_dir, "--target", "clnorm", "-j", jobs])
    found = sorted(glob.glob(os.path.join(build_dir, "src", "libclnorm.so.*")), key=len)
    if not found:
        raise RuntimeError("clnorm: the CMake build made no libclnorm.so.* in %s/src" % build_dir)
    return os.path.realpath(found[0])


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        build_base = self.get_finalized_command("build").build_base
        lib = build_library(os.path.join(os.path.abspath(build_base), "cmake"))
        dest = os.path.join(self.build_lib, "clnorm")
        os.makedirs(dest, exist_ok=True)
        # Installed under its SONAME, which is the name clnorm._lib loads.
        shutil.copyfile(lib, os.path.join(dest, "libclnorm.so.0"))


class BinaryDistribution(Distribution):
    """The wheel holds a native library: platform-specific, though not tied to one Python
    (ctypes, no extension module)."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithLibrary}
try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel
except ImportError:  # no wheel package: pip falls back to what setuptools can do
    pass

setup(
    version=header_version(),
    packages=["clnorm"],
    package_dir={"": "python"},
    cmdclass=cmdclass,
    distclass=BinaryDistribution,
    options={"build": {"build_base": os.path.join("build-py", "setuptools")}},
    zip_safe=False,
)
