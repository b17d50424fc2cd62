"""The report page in a real browser: headless Chromium driven by playwright.

Needs Python ``playwright`` (the ``test`` extra) and a Chromium binary (Debian's
``chromium`` package; ``make test`` installs it when apt can). Playwright's own browser
download is not used. Every test skips, saying why, when either is missing.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from report_fixtures import labelled_rows

import neardup
from neardup.io import ReaderConfig
from neardup.report import outputs_from_result, write_report

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _chromium() -> str | None:
    explicit = os.environ.get("NEARDUP_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install 'neardup[test]')"
    )
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set NEARDUP_CHROMIUM)")
    with sync_api.sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except Exception as exc:  # noqa: BLE001 - any launch failure means no usable browser
            pytest.skip(f"Chromium at {executable} does not start headless: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A run of the labelled corpus with a 48-hour window, and its page."""
    folder = tmp_path_factory.mktemp("browser")
    rows = labelled_rows()
    corpus = folder / "news.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = neardup.dedup(rows, method="minhash", id_field="id", date_field="date",
                           time_window_hours=48)
    page = folder / "report.html"
    write_report(page, outputs_from_result(result), [corpus],
                 ReaderConfig(id_field="id", date_field="date"), label_field="cluster")
    return page, result


@pytest.fixture
def page(browser, report):
    path, _ = report
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
           if m.type in ("error", "warning") else None)
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    tab.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    tab.goto(path.as_uri())
    tab.wait_for_selector("body[data-ready='1']", timeout=15_000)
    tab.problems, tab.requests = problems, requests
    yield tab
    context.close()


def test_loads_offline_without_console_errors(page, report):
    assert page.problems == []
    assert page.requests == [report[0].as_uri()]  # nothing else fetched
    assert page.locator("#cards .card").count() >= 8
    assert page.locator("#histogram-svg rect").count() > 0
    assert page.locator("#threshold-line").count() == 1
    assert page.locator("#sweep tr.current").count() == 1


def test_cluster_list_shows_every_cluster(page, report):
    _, result = report
    page.click("nav button[data-tab=clusters]")
    rows = page.locator("#cluster-list .cluster-row")
    shown = {int(rows.nth(k).get_attribute("data-cluster")) for k in range(rows.count())}
    assert shown == set(result.clusters.tolist())
    assert "clusters shown" in page.inner_text("#list-count")


def test_clicking_a_cluster_shows_its_aligned_members(page, report):
    _, result = report
    ids = result.ids.tolist()
    cluster = int(result.clusters[ids.index("s0")])
    page.click("nav button[data-tab=clusters]")
    page.click(f".cluster-row[data-cluster='{cluster}']")
    members = page.locator("#detail .member")
    assert members.count() == 4
    shown_ids = {members.nth(k).get_attribute("data-id") for k in range(4)}
    assert shown_ids == {"s0", "s0-c1", "s0-c2", "s0-c3"}
    # The representative is the longest text: the copy that added "(Reuters)".
    assert page.locator("#detail .member:has(.badge.rep)").get_attribute("data-id") == "s0-c2"
    # The others' substituted and deleted words are marked.
    assert page.locator("#detail .member .sub").count() >= 3
    assert page.inner_text("#detail .member[data-id='s0'] .body > del") == "(Reuters)"
    assert page.locator("#detail .member .badge", has_text="score").count() == 3


def test_search_finds_a_document_by_id_and_by_text(page):
    page.click("nav button[data-tab=clusters]")
    page.fill("#search", "s1-rewrite")
    page.wait_for_function("document.querySelectorAll('#cluster-list .cluster-row').length === 1")
    assert page.locator("#detail .member.hit").get_attribute("data-id") == "s1-rewrite"
    page.fill("#search", "KANSAS")
    page.wait_for_selector("#detail .member.hit[data-id='s1-rewrite']")
    page.fill("#search", "no document says this")
    page.wait_for_function("document.querySelectorAll('#cluster-list .cluster-row').length === 0")
    assert "0 of" in page.inner_text("#list-count")
    page.fill("#search", "odd</script>")
    page.wait_for_selector("#detail .member.hit")
    assert page.problems == []  # the hostile id and text stayed text


def test_templates_window_and_labels_tabs(page):
    page.click("nav button[data-tab=apart]")
    outside = page.inner_text("#outside")
    assert "acme" in outside and "bolt" in outside and "template" in outside
    assert page.is_visible("#labels-tab")
    page.click("#labels-tab")
    assert "story1" in page.inner_text("#misses")
    page.click("#misses a.jump >> nth=0")
    assert page.is_visible("#tab-clusters")
    assert page.locator("#detail .member").count() >= 1
