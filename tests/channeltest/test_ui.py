"""The browsable view at ``/ui/`` of ``pivoter catalog serve``: every page and link answers, the
graph is an SVG, and in a real headless browser (Debian's chromium driven by Playwright) the
pages load, the graph renders and links between packages, channels and bundles work. The
screenshots are kept in ``test-artifacts/catalog-ui/``."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import load_snapshot
from tests.channeltest.helpers import DATA
from tests.tools import tool

CATALOG = DATA / "real" / "community-operators-prod-v4.20"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "catalog-ui"


@pytest.fixture(scope="module")
def ui_url() -> Iterator[str]:
    snap = load_snapshot(str(CATALOG), name="community")
    server = CatalogHTTPServer(("127.0.0.1", 0), name="community", snapshot=lambda: snap)
    server.serve_in_thread()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def test_every_link_answers(ui_url: str) -> None:
    seen: set[str] = set()
    todo = ["/ui/"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        status, ctype, body = get(ui_url + path)
        assert status == 200, path
        if ctype.startswith("text/html"):
            todo.extend(re.findall(r'(?:href|src)="(/ui/[^"]*)"', body.decode()))
    assert "/ui/findings" in seen
    assert "/ui/p/aws-neuron-operator/c/Fast/graph.svg" in seen
    assert "/ui/p/slurm-operator/b/slurm-operator.v1.0.1-1" in seen
    assert len(seen) > 25


def test_pages_show_paths_findings_and_properties(ui_url: str) -> None:
    _, _, index = get(ui_url + "/ui/")
    assert b"2 packages" in index
    _, _, channel = get(ui_url + "/ui/p/aws-neuron-operator/c/Fast")
    assert b"does not reach the head" in channel
    assert b"stranded-entry" in channel
    _, ctype, svg = get(ui_url + "/ui/p/aws-neuron-operator/c/Fast/graph.svg")
    assert ctype == "image/svg+xml"
    assert b"<svg" in svg
    assert b"1.2.0" in svg
    _, _, bundle = get(ui_url + "/ui/p/slurm-operator/b/slurm-operator.v1.0.1")
    assert b"olm.package" in bundle
    assert b"release-1.0" in bundle


def test_findings_are_grouped_and_link_to_their_nodes(ui_url: str) -> None:
    _, _, findings = get(ui_url + "/ui/findings")
    node = "node-Fast__aws-neuron-operator.v0.1.2"
    assert f'href="/ui/p/aws-neuron-operator/c/Fast#{node}"'.encode() in findings
    # the three entries that stop at 0.1.2 are one finding, the three under it
    assert b"upgrades from 0.0.1-0.0.3 (3 entries) stop at 0.1.2" in findings
    assert b"<summary>3 findings</summary>" in findings
    _, _, channel = get(ui_url + "/ui/p/aws-neuron-operator/c/Fast")
    assert f'class="node-link" href="#{node}"'.encode() in channel
    assert b'<tr class="mark-stranded">' in channel


def test_channel_page_without_graphviz(monkeypatch: pytest.MonkeyPatch) -> None:
    """No dot: the drawing is an image of Mermaid text, and the page draws the legend itself."""
    from pivoter.catalogserver import ui

    monkeypatch.setattr(ui.shutil, "which", lambda _: None)
    snap = load_snapshot(str(CATALOG), name="community")
    page = ui.render("/ui/p/aws-neuron-operator/c/Fast", snap.catalog, "community").body
    assert b'<img alt="upgrade graph of Fast"' in page
    assert b'<p class="legend">' in page
    assert b"stranded: users are never upgraded" in page
    assert b"<svg" not in page


def test_unknown_pages_are_404(ui_url: str) -> None:
    assert get(ui_url + "/ui/p/nope")[0] == 404
    assert get(ui_url + "/ui/p/slurm-operator/c/nope")[0] == 404
    assert get(ui_url + "/ui/p/slurm-operator/b/nope")[0] == 404
    assert get(ui_url + "/ui/elsewhere")[0] == 404


@pytest.mark.tools  # Debian's chromium
def test_in_a_headless_browser(ui_url: str) -> None:
    chromium = str(tool("chromium"))
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(ui_url + "/ui/")
            expect(page).to_have_title("Catalog community")
            page.screenshot(path=str(ARTIFACTS / "index.png"))
            page.click("text=aws-neuron-operator")
            expect(page).to_have_title("Package aws-neuron-operator")
            page.click("table >> text=Fast")
            expect(page).to_have_title("Channel Fast of aws-neuron-operator")
            page.wait_for_selector("#graph svg")
            assert page.evaluate("document.querySelector('#graph svg').getBBox().width") > 200
            page.screenshot(path=str(ARTIFACTS / "channel.png"), full_page=True)
            page.click("a[href='/ui/p/aws-neuron-operator/b/aws-neuron-operator.v0.1.2'] >> nth=0")
            expect(page).to_have_title("Bundle aws-neuron-operator.v0.1.2")
            page.click("nav >> text=packages")
            expect(page).to_have_title("Catalog community")
            page.click("text=catalog test findings")
            assert page.locator("td.error").count() > 0
            page.screenshot(path=str(ARTIFACTS / "findings.png"))
        finally:
            browser.close()
    assert (ARTIFACTS / "channel.png").stat().st_size > 10_000


STRANDED_NODE = "node-Fast__aws-neuron-operator.v0.1.2"


@pytest.mark.tools  # Debian's chromium
def test_browser_channel_page_marks_the_stranded_entry(ui_url: str) -> None:
    """The stranded entry 0.1.2 of aws-neuron-operator's Fast channel is drawn in the stranded
    colours, the legend says so, and the stranded-entry finding links to that very node, which
    the page then outlines (CSS :target)."""
    chromium = str(tool("chromium"))
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(ui_url + "/ui/p/aws-neuron-operator/c/Fast")
            node = page.locator(f"[id='{STRANDED_NODE}']")
            node.wait_for()
            shape = node.locator("path").first
            assert shape.get_attribute("fill") == "#f8c4c4"  # stranded: red fill, red line
            assert shape.get_attribute("stroke") == "#b00020"
            assert "stranded: users are never upgraded" in node.inner_html()  # its tooltip
            legend = page.locator("#graph svg").inner_html()  # graphviz draws it below the graph
            assert "stranded: users are never upgraded" in legend
            assert "downgrade edge" in legend
            # the 0.0.5 -> 0.1.2 edge is drawn as a downgrade
            assert page.locator("#graph svg g.edge text", has_text="downgrade").count() == 1
            row = page.locator("tr", has=page.locator("td", has_text="stranded-entry"))
            link = row.locator("a.node-link")
            assert link.get_attribute("href") == f"#{STRANDED_NODE}"
            before = shape.evaluate("e => getComputedStyle(e).strokeWidth")
            link.click()
            assert page.evaluate("location.hash") == f"#{STRANDED_NODE}"
            assert node.evaluate("e => e.matches(':target')")
            after = shape.evaluate("e => getComputedStyle(e).strokeWidth")
            assert (before, after) == ("2px", "5px")
            page.screenshot(path=str(ARTIFACTS / "stranded.png"), full_page=True)
        finally:
            browser.close()
