"""The corpus stage on a Ray cluster (``engine="ray"``): the local engine's stages as Ray
tasks over numpy arrays, so a corpus larger than one machine is de-duplicated with the
same clusters.

Dataflow (S shards, P key partitions; each ``->`` an all-to-all exchange of objects
through the object store, S x P of them, as in Ray Data's pull-based shuffle; with the
CLI's outputs nothing but counts reaches the driver)::

    sketch task per shard (files cut into row ranges): read + method.sketch +
        method.candidate_keys --> facts (Arrow: id, length, date, ...), arrays (numpy:
        the method's verification arrays, date), key rows hashed into P parts
        (key uint64, shard row uint32: 12 B per key row)
    waves of key partitions, each as large as all the earlier ones (1, 1, 2, 4, ...):
      (later waves) bucket-keys task per partition: its key rows (of shared keys only,
           for fixed-width methods) sorted; asks each range of the earlier waves' labels
           for the roots of its documents (lookup task per range)
      -> bucket task per partition: the partition's key rows from every shard, grouped
           by key: a star plus chain per shared key (the local engine's bucket_edges),
           minus (later waves) the edges whose documents earlier waves joined; asks each
           shard for the rows of the documents left
      -> gather task per shard: those rows of its arrays, one object per partition
      -> link task per partition: the local engine's PartitionLinker (skip an edge whose
           documents are joined, verify the others) with a union-find over the
           partition's documents, seeded (later waves) with the earlier roots of them;
           for ngram/spotsigs also the map of the pair-count exchange (records by range
           of left document, reduced after the last wave: _RecordCollector)
           --> partition forest (<= one edge per document of the partition)
      connected components (after each wave, over the earlier labels and the new forests):
           C ranges of document positions (C from RayConfig.components_memory); rounds of
           large-star and small-star tasks, one per range (Kiveris et al. 2014), until
           every component is a star on its smallest position --> labels per range
           (joined document, root)
    --> outputs (write_outputs): per shard, its joined documents' facts cut by range of
        root; per range of roots, an assign task: sizes, representatives, template flags,
        a spanning forest of its components' edges (the pairs table); per shard, the
        clusters table and the kept records. The driver gets counts.

Only documents of shared keys travel past the sketch task, and only their verification
arrays (a MinHash signature: 4 bytes per permutation), once per partition that verifies
one of their edges. Waves, because partitions linked in parallel cannot skip a
document that another partition joins: with one wave a near-copy found in most of the 25
bands is verified in most partitions (11.3M verifications at 1M documents against the
local engine's 1.13M; two waves 2.65M; doubling waves 1.20M); a wave skips, before any
array moves, the edges whose documents the earlier waves already joined. Document positions are global input order (a shard's offset
plus its row), so roots, labels and representatives are those of the local engine: the
components of the accepted candidate edges do not depend on which edges were skipped as
already joined, nor on how keys are partitioned.

Ray retries a task whose worker dies, and rebuilds a lost object from the task that
made it; a task's output counts only once it completes, so a killed worker loses or
duplicates nothing. Errors raised in workers while reading (a malformed record) come
back as the same :class:`~neardup.errors.InputError` naming the file and line, before
anything is written.

Modules, in the order the data flows: :mod:`~neardup.engine.ray.connection` (import
Ray, connect, :class:`RayConfig`), :mod:`~neardup.engine.ray.shards` (read tasks and
what a shard gives), :mod:`~neardup.engine.ray.keyed` (sketch, statistics, bucket tasks,
waves), :mod:`~neardup.engine.ray.rows` (rows shipped to the link tasks),
:mod:`~neardup.engine.ray.link` (link tasks, the local linker inside),
:mod:`~neardup.engine.ray.exchange` (the pair-count exchange),
:mod:`~neardup.engine.ray.retrieval` (mutual retrieval: sanderson),
:mod:`~neardup.engine.ray.components` (identity links, large/small star),
:mod:`~neardup.engine.ray.vectors` (embed, IVF, search), :mod:`~neardup.engine.ray.run`
(the driver), :mod:`~neardup.engine.ray.outputs` (the CLI's outputs), with the helpers
:mod:`~neardup.engine.ray.positions` and :mod:`~neardup.engine.ray.tasks`.
"""

from neardup.engine.ray.connection import (
    INSTALL_HINT,
    RUNTIME_ENV_ENV,
    RayConfig,
    connect,
    import_ray,
    worker_env,
    worker_runtime_env,
)
from neardup.engine.ray.outputs import write_outputs
from neardup.engine.ray.run import RayRun, run_ray_stage
from neardup.engine.ray.shards import RayInputs, plan_shards

__all__ = ["INSTALL_HINT", "RUNTIME_ENV_ENV", "RayConfig", "RayInputs", "RayRun", "connect", "import_ray",
           "plan_shards", "run_ray_stage", "worker_env", "worker_runtime_env", "write_outputs"]
