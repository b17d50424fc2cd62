"""A persistent, incremental near-duplicate index and its HTTP service.

:class:`Index` keeps documents, their clusters, their verification arrays and their
candidate-key postings in one SQLite database, so that new documents can be added (each
joins the cluster of the stored documents it duplicates) or queried (which stored
documents does it duplicate?) without re-running ``dedup`` over everything. ``Index.bulk_add`` loads a large corpus into an
empty index in one pass (:mod:`neardup.index._bulk`); the embedding methods (retsim,
biencoder) keep their vectors in faiss segment files beside the database
(:mod:`neardup.index._vectors`).
"""

from neardup.index._index import Index
from neardup.index._methods import DuplicateIdError, supported_methods
from neardup.index._results import AddResult, BulkResult, QueryResult
from neardup.index._errors import IndexBusyError, IndexFormatError, IndexMismatchError

__all__ = [
    "AddResult",
    "BulkResult",
    "DuplicateIdError",
    "Index",
    "IndexBusyError",
    "IndexFormatError",
    "IndexMismatchError",
    "supported_methods",
    "QueryResult",
]
