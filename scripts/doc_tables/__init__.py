"""The tables generated into README.md and docs/*.md, run by ``python scripts/docs_tables.py``.

- ``sources``: every raw result file a table reads, by name, with the command that rewrites it.
- ``results``: reading those files; ``formatting``: Markdown tables and their figures.
- one module per docs page or family of pages, each a ``TABLES`` dict of NAME -> renderer:
  ``methods``, ``noisy_text``, ``scale``, ``rerank``, ``neural``, ``spans``,
  ``decontamination``, ``suite_timings``.
- ``registry``: every NAME and its renderer; ``blocks``: the marker blocks of a doc.
"""
