"""neardup's speed and memory benchmarks, one suite: ``python -m benchmarks run CONFIG``.

Each benchmark is a module of this package with ``run(argv) -> dict`` (its options as on a
command line, its raw result as returned); a config (``configs/<name>.toml``) says which
benchmarks run, with which options, peers and scale. See README.md.
"""
