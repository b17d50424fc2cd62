"""Run a module with ``neardup.methods.pair_features.SEGMENTS`` set to another number of
parts (the ``seg_*`` features' S; the library's is 4), for the S = 6 variant:

    python -m experiments.ocr_features.with_segments 6 MODULE [ARGS...]

The kernels read ``SEGMENTS`` when called, and the harnesses run in one process, so every
profile and pair feature of that run uses S parts. A model fitted on S = 6 features records
``"segments": 6`` in its model.json, which the library does not read: run it through here.
"""

import runpy
import sys

import neardup.methods.pair_features as pair_features

if __name__ == "__main__":
    pair_features.SEGMENTS = int(sys.argv[1])
    module = sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
