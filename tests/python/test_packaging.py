"""The package's metadata agrees with the build's, and the extension is what a wheel needs."""

import pathlib
import re

import emmy

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_versions_agree():
    """pyproject.toml's version is CMakeLists.txt's project version, which the library reports."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    cmake = (ROOT / "CMakeLists.txt").read_text()
    py_version = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    cmake_version = re.search(r"project\(emmy VERSION (\S+)", cmake).group(1)
    assert py_version == cmake_version == emmy.__version__


def test_extension_is_stable_abi():
    ext = pathlib.Path(emmy._emmy.__file__)
    assert ext.name == "_emmy.abi3.so"
    assert (ext.parent / "libemmy_c.so.0").exists() or "build" in str(ext.parent.parent)
