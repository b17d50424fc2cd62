"""A small labelled news corpus for the report tests (shared by conftest and the browser
tests)."""

from __future__ import annotations

STORIES = [
    "The central bank raised its key interest rate by half a point on Tuesday, citing "
    "stubborn inflation and strong wage growth across the economy, officials said.",
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter "
    "crop in the southern plains, traders said on Monday after the close.",
    "The company said first quarter profit rose to 12 mln dlrs from eight mln dlrs a year "
    "ago on higher sales of its industrial products and lower costs.",
    "Heavy snow closed the main mountain pass for a third day and stranded hundreds of "
    "trucks carrying food and fuel to the northern towns, police said.",
]


def _copy(story: str, k: int) -> str:
    words = story.split()
    words[2] = words[2].upper()
    words[4 + 3 * k] = ("again", "also", "still")[k - 1]
    return " ".join(words) + (" (Reuters)" if k == 2 else "")


def labelled_rows() -> list[dict]:
    """Ids, texts, dates and ground-truth labels: four stories with copies, one story
    whose second half was rewritten (labelled a copy, too far apart for minhash: a miss),
    two template stories with different labels (a false merge) and singletons."""
    rows = []
    for i, story in enumerate(STORIES):
        rows.append({"id": f"s{i}", "text": story, "date": f"1987-03-0{i + 1}T10:00:00",
                     "cluster": f"story{i}"})
        for k in range(1, 3 if i else 4):
            rows.append({"id": f"s{i}-c{k}", "text": _copy(story, k),
                         "date": f"1987-03-0{i + 1}T1{k}:00:00", "cluster": f"story{i}"})
    rows.append({"id": "s1-rewrite", "cluster": "story1", "date": "1987-03-02T18:00:00",
                 "text": "Wheat futures fell sharply in Chicago as the weather in Kansas "
                         "changed, and dealers expect more losses before the spring."})
    # One earnings template, two companies: a false merge against the labels; five days
    # apart, so a 48-hour time window keeps them apart.
    template = ("{} said first quarter net profit rose to {} mln dlrs from 10 mln dlrs on "
                "sales of 80 mln dlrs, the company said in a statement on Tuesday.")
    rows.append({"id": "acme", "text": template.format("Acme Corp", 12),
                 "date": "1987-03-02T09:00:00", "cluster": "acme"})
    rows.append({"id": "bolt", "text": template.format("Acme Corp", 19),
                 "date": "1987-03-07T09:00:00", "cluster": "bolt"})
    rows.append({"id": "lonely", "text": "Nothing else in the corpus looks like this one.",
                 "date": None, "cluster": "lonely"})
    rows.append({"id": "odd</script><b>", "text": "A hostile id and text </script><script>"
                 "alert(1)</script> <!-- stays text -->", "date": None, "cluster": "odd"})
    return rows
