"""Regenerate the report screenshots in docs/img/ (used by the README).

Runs `neardup dedup` on the bundled demo corpus (ids, dates, a 48-hour window), writes its
report with the demo's ground-truth labels, and photographs the page in headless Chromium
(Debian's ``chromium``, driven by playwright): the overview, a cluster with its members
aligned, and the labels tab.

    python scripts/report_screenshots.py [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def neardup(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "neardup", *args], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from neardup.data import demo_corpus_path

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        read = ["--id-field", "id", "--date-field", "date"]
        neardup("dedup", str(demo_corpus_path()), *read, "--time-window", "48",
                "--clusters-out", str(run / "c.parquet"), "--pairs-out", str(run / "p.parquet"),
                "--report", str(run / "run.json"), "--quiet")
        page_path = run / "report.html"
        neardup("report", str(run / "c.parquet"), str(run / "p.parquet"), str(run / "run.json"),
                *read, "--label-field", "cluster", "--out", str(page_path))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860},
                                    device_scale_factor=1)
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.screenshot(path=str(args.out / "report-overview.png"))
            page.click("nav button[data-tab=clusters]")
            # A cluster of reprints with OCR noise: search for words of a known story.
            page.fill("#search", "caltex")
            page.wait_for_selector("#detail .member.hit")
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(args.out / "report-cluster.png"))
            page.click("#labels-tab")
            page.screenshot(path=str(args.out / "report-labels.png"))
            browser.close()
    for name in ("report-overview", "report-cluster", "report-labels"):
        print(args.out / f"{name}.png")


if __name__ == "__main__":
    main()
