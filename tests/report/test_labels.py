"""False merges and misses against ground-truth labels."""

import numpy as np

from neardup.report.labels import label_errors


def test_false_merges_and_misses_with_their_costs():
    ids = np.array(list("abcdefgh"), dtype=object)
    clusters = np.array([0, 0, 0, 1, 1, 2, 3, 3])
    labels = np.array(["x", "x", "y", "z", "z", "z", "w", "w"], dtype=object)
    found = label_errors(ids, clusters, labels)
    assert found["false_merges"] == 1 and found["misses"] == 1
    [merge] = found["false_merge_list"]
    assert merge == {"cluster": 0, "size": 3, "parts": 2, "pairs": 2,
                     "groups": [["x", 2, ["a", "b"]], ["y", 1, ["c"]]]}
    [miss] = found["miss_list"]
    assert miss == {"label": "z", "size": 3, "parts": 2, "pairs": 2,
                    "groups": [[1, 2, ["d", "e"]], [2, 1, ["f"]]]}
    assert found["metrics"]["fp"] == 2 and found["metrics"]["fn"] == 2


def test_perfect_clustering_has_no_errors():
    ids = np.array(["a", "b", "c"], dtype=object)
    found = label_errors(ids, np.array([0, 0, 1]), np.array(["p", "p", "q"], dtype=object))
    assert found["false_merges"] == found["misses"] == 0
    assert found["false_merge_list"] == found["miss_list"] == []
    assert found["metrics"]["ari"] == 1.0


def test_lists_are_capped_and_ordered_by_cost():
    # 30 clusters of two labels each; cluster k has k + 2 documents of its second label.
    clusters, labels = [], []
    for k in range(30):
        clusters += [k] * (k + 3)
        labels += [f"solo{k}"] + [f"group{k}"] * (k + 2)
    ids = np.array([str(i) for i in range(len(clusters))], dtype=object)
    found = label_errors(ids, np.array(clusters), np.array(labels, dtype=object), limit=5,
                         examples=2)
    assert found["false_merges"] == 30
    assert [m["cluster"] for m in found["false_merge_list"]] == [29, 28, 27, 26, 25]
    assert all(len(g[2]) <= 2 for m in found["false_merge_list"] for g in m["groups"])
