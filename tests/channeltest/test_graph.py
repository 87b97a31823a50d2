"""Upgrade graph drawings: DOT and Mermaid text, graphviz layouts with no overlapping node label
boxes at the default size for a 120-bundle package with skipRanges, and bounded size."""

from __future__ import annotations

import json
import subprocess
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from resolver.channeltest.graph import ChannelGraph, channel_graphs
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.render import DrawnEdge, GraphTooLarge, drawn_edges, to_dot, to_mermaid
from tests.channeltest.helpers import DATA, GOOD, Docs, bundle, load, write
from tests.clirun import pivoter as run_pivoter
from tests.tools import SHARED, requires_shared, tool


def dot_binary() -> str:
    return str(tool("dot", "graphviz"))


def big_package(n: int = 120) -> Docs:
    """``big``: n bundles 1.0.0 ... in minors of 10; stable replaces each previous one and
    every minor's first bundle has a skipRange over the previous minor; fast holds the last 30,
    candidate the last 10 plus a deprecated one."""
    versions = [f"1.{i // 10}.{i % 10}" for i in range(n)]
    docs: Docs = [{"schema": "olm.package", "name": "big", "defaultChannel": "stable"}]
    entries = []
    for i, v in enumerate(versions):
        e: dict[str, Any] = {"name": f"big.v{v}"}
        if i:
            e["replaces"] = f"big.v{versions[i - 1]}"
        if i % 10 == 0 and i:
            e["skipRange"] = f">=1.{i // 10 - 1}.0 <1.{i // 10}.0"
        if i % 10 == 5:
            e["skips"] = [f"big.v{versions[i - 2]}"]
        entries.append(e)
        docs.append(bundle("big", v))
    docs.append({"schema": "olm.channel", "package": "big", "name": "stable", "entries": entries})
    fast = [dict(e) for e in entries[-30:]]
    fast[0].pop("replaces", None)
    docs.append({"schema": "olm.channel", "package": "big", "name": "fast", "entries": fast})
    cand = [dict(e) for e in entries[-10:]]
    cand[0].pop("replaces", None)
    cand[0].pop("skipRange", None)
    docs.append({"schema": "olm.channel", "package": "big", "name": "candidate", "entries": cand})
    docs.append(
        {
            "schema": "olm.deprecations",
            "package": "big",
            "entries": [
                {"reference": {"schema": "olm.bundle", "name": entries[-5]["name"]}, "message": "x"}
            ],
        }
    )
    return docs


def layout_boxes(dot_text: str) -> list[tuple[str, float, float, float, float]]:
    """Node label boxes (name, x0, y0, x1, y1) in points, from graphviz's own layout."""
    done = subprocess.run(
        [dot_binary(), "-Tjson"], input=dot_text.encode(), capture_output=True, check=True
    )
    layout = json.loads(done.stdout)
    boxes = []
    for obj in layout.get("objects", []):
        if "pos" not in obj or "width" not in obj:
            continue  # clusters
        x, y = (float(p) for p in obj["pos"].split(","))
        w, h = float(obj["width"]) * 72 / 2, float(obj["height"]) * 72 / 2
        boxes.append((obj["name"], x - w, y - h, x + w, y + h))
    return boxes


def overlaps(boxes: list[tuple[str, float, float, float, float]]) -> list[tuple[str, str]]:
    found = []
    for a, b in combinations(boxes, 2):
        if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]:
            found.append((a[0], b[0]))
    return found


@pytest.mark.tools  # lays out with graphviz's dot
def test_big_package_layout_has_no_overlapping_labels(tmp_path: Path) -> None:
    catalog = load(write(tmp_path / "big", big_package()))
    graphs = channel_graphs(catalog, "big")
    text = to_dot(graphs, "stable")
    boxes = layout_boxes(text)
    assert len(boxes) == 120 + 30 + 10  # one node per bundle per channel cluster
    assert overlaps(boxes) == []


def test_dot_marks_heads_deprecations_and_edge_kinds(tmp_path: Path) -> None:
    catalog = load(write(tmp_path / "big", big_package()))
    graphs = channel_graphs(catalog, "big")
    text = to_dot(graphs, "stable")
    assert "rankdir=LR" in text
    assert "channel stable (default)" in text
    assert text.count("peripheries=2") == 3  # one head per channel
    assert "(deprecated)" in text
    assert "style=dashed" in text  # skipRange
    assert "style=dotted" in text  # skips
    stable = next(g for g in graphs if g.channel == "stable")
    ranges = [e for e in drawn_edges(stable) if e.kind == "skipRange"]
    assert len(ranges) == 11  # one per skipRange, not one per matched bundle
    # 1.0.0 ... 1.0.8 (1.0.9 is reached by replaces): drawn once, from the oldest
    assert ranges[0] == DrawnEdge("big.v1.0.0", "big.v1.1.0", "skipRange", ">=1.0.0 <1.1.0 (9)")


def test_mermaid_text() -> None:
    graphs = channel_graphs(load(GOOD), "demo")
    text = to_mermaid(graphs, "stable")
    assert text.startswith("flowchart LR\n")
    assert 'subgraph ch0["channel stable (default)"]' in text
    assert "c0_demo_v1_0_0 --> c0_demo_v1_1_0" in text
    assert "-.->" in text  # the skipRange of 1.2.0
    assert "class c0_demo_v2_0_0,c1_demo_v2_1_0_rc_1 head" in text


def test_too_many_nodes_is_refused_with_how_to_narrow(tmp_path: Path) -> None:
    catalog = load(write(tmp_path / "big", big_package()))
    with pytest.raises(GraphTooLarge, match="--channel"):
        to_dot(channel_graphs(catalog, "big"), "stable", max_nodes=100)


@pytest.mark.slow
@pytest.mark.tools  # lays out with graphviz's dot
@requires_shared  # the largest real graph (950 KB), not copied into tests/data
def test_project_quay_renders_legibly() -> None:
    catalog = load(SHARED / "catalogs" / "community-operators-prod-v4.20" / "project-quay")
    graphs = channel_graphs(catalog, "project-quay")
    assert sum(len(g.entries) for g in graphs) >= 150
    assert overlaps(layout_boxes(to_dot(graphs, "stable-3.17"))) == []


def _downgrade_graphs() -> list[ChannelGraph]:
    catalog, _ = load_for_test(str(DATA / "every-code"), use_cache=False)  # broken.yaml aside
    return channel_graphs(catalog, "downgrade")


def _node_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(f'"c0_{name}" ['))


def test_dot_draws_each_defect_apart_with_a_legend() -> None:
    text = to_dot(_downgrade_graphs(), "stable")
    stranded = _node_line(text, "downgrade.v1.2.0")
    assert 'fillcolor="#f8c4c4" color="#b00020"' in stranded
    assert 'id="node-stable__downgrade.v1.2.0"' in stranded
    assert "stranded: users are never upgraded" in stranded  # its tooltip
    assert 'fillcolor="#fde2b8"' in _node_line(text, "downgrade.v1.0.0")  # does not reach head
    assert "dashed" in _node_line(text, "downgrade.v1.1.0")  # unreachable
    assert "peripheries=2" in _node_line(text, "downgrade.v2.0.0")  # the head, unmarked
    assert "#b00020" not in _node_line(text, "downgrade.v2.0.0")
    edge = next(
        line
        for line in text.splitlines()
        if '"c0_downgrade.v1.2.0" -> "c0_downgrade.v1.1.0"' in line
    )
    assert 'label="downgrade"' in edge
    assert "style=bold" in edge
    legend = next(line for line in text.splitlines() if "label=<<table" in line)
    rows = ["stranded", "do not reach the head", "unreachable", "downgrade edge"]
    assert [legend.index(r) for r in rows] == sorted(legend.index(r) for r in rows)
    assert "label=<<table" not in to_dot(channel_graphs(load(GOOD), "demo"), "stable")


def test_mermaid_marks_defects() -> None:
    text = to_mermaid(_downgrade_graphs(), "stable")
    assert "class c0_downgrade_v1_2_0 stranded" in text
    assert "class c0_downgrade_v1_0_0 offhead" in text
    assert "class c0_downgrade_v1_1_0 unreachable" in text
    links = [line for line in text.splitlines() if "-->" in line or "-.->" in line]
    index = next(i for i, line in enumerate(links) if 'replaces downgrade"|' in line)
    assert f"linkStyle {index} stroke:#b00020" in text


@pytest.mark.tools  # catalog graph runs graphviz's dot
def test_catalog_graph_svg_has_a_node_per_finding(tmp_path: Path) -> None:
    dot_binary()
    out = tmp_path / "g.svg"
    result = run_pivoter(
        "catalog", "graph", str(DATA / "every-code"), "--package", "downgrade", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    svg = out.read_text()
    # graphviz writes the id with '-' as &#45;: the document's id is node-stable__downgrade.v1.2.0
    start = svg.index('id="node&#45;stable__downgrade.v1.2.0"')
    assert 'fill="#f8c4c4" stroke="#b00020"' in svg[start : svg.index("</g>", start)]
    assert "legend" in svg
