"""Catalog maintainers' tooling: what a catalog's channels do to the people who upgrade through
them (``pivoter catalog test|diff|graph``), as pure logic over the catalog model.

Upgrade edges come from the resolver's successor test; nothing here talks to a cluster.
"""

from resolver.channeltest.changes import scope_report
from resolver.channeltest.diff import Change, UpgradeDiff, diff_catalogs
from resolver.channeltest.expectations import (
    Expectation,
    ExpectationError,
    check_expectations,
    load_expectations,
    parse_expectations,
)
from resolver.channeltest.findings import CODES, ERROR, WARNING, Finding
from resolver.channeltest.graph import (
    ChannelGraph,
    Edge,
    Path,
    build_channel_graph,
    channel_graphs,
    node_id,
)
from resolver.channeltest.grouping import FindingGroup, group_findings
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.marks import Marks, channel_marks
from resolver.channeltest.render import GraphTooLarge, to_dot, to_mermaid
from resolver.channeltest.report import Report, run_catalog_test
from resolver.channeltest.templates import Expanded, expand_file, find_templates

__all__ = [
    "CODES",
    "ERROR",
    "WARNING",
    "Change",
    "ChannelGraph",
    "Edge",
    "Expanded",
    "Expectation",
    "ExpectationError",
    "Finding",
    "FindingGroup",
    "GraphTooLarge",
    "Marks",
    "Path",
    "Report",
    "UpgradeDiff",
    "build_channel_graph",
    "channel_graphs",
    "channel_marks",
    "check_expectations",
    "diff_catalogs",
    "expand_file",
    "find_templates",
    "group_findings",
    "load_expectations",
    "load_for_test",
    "node_id",
    "parse_expectations",
    "run_catalog_test",
    "scope_report",
    "to_dot",
    "to_mermaid",
]
