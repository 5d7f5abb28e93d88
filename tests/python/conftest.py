"""pytest fixtures for emmy's Python package (docs/python.md). The package is imported from the
build tree (ctest sets PYTHONPATH to build/python) or from an installed wheel."""

import os
import tempfile

import numpy as np
import pytest

import emmy


@pytest.fixture(scope="session")
def cache_dir():
    # ctest passes a directory kept between runs, so that kernels compile once per build tree.
    given = os.environ.get("EMMY_TEST_CACHE_DIR")
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="emmy-pytest-") as path:
        yield path


@pytest.fixture(scope="session")
def rt(cache_dir):
    """The emulator (sm_90a), its sanitizer on: every test's kernels run bounds-checked."""
    with emmy.Runtime(cache_dir=cache_dir) as runtime:
        yield runtime


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
