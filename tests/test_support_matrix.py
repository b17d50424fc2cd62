"""The support matrix in the docs is the one the methods' declarations give."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_published_support_matrix_is_generated_from_the_methods():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "support_matrix.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
