"""OpenMP threads sleep when idle: numba's parallel kernels must not spin on cores they
do not use (docs/decisions/0044-openmp-threads-sleep-when-idle.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SHOW = ("import neardup, numba.np.ufunc.parallel as p, os; "
         "print(os.environ['OMP_WAIT_POLICY'])")


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_importing_neardup_lets_idle_openmp_threads_sleep_unless_told_otherwise(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run([sys.executable, "-c", _SHOW], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == expected
