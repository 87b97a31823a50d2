"""Catalog maintainers' tooling: what a catalog's channels do to the people who upgrade through
them (``pivoter catalog test|diff|graph``), as pure logic over the catalog model.

Upgrade edges come from the resolver's successor test; nothing here talks to a cluster.
"""

from resolver.channeltest.diff import CatalogDiff, Change, diff_catalogs
from resolver.channeltest.expectations import (
    Expectation,
    ExpectationError,
    check_expectations,
    load_expectations,
    parse_expectations,
)
from resolver.channeltest.findings import CODES, ERROR, WARNING, Finding
from resolver.channeltest.graph import ChannelGraph, Edge, Path, build_channel_graph, channel_graphs
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.render import GraphTooLarge, to_dot, to_mermaid
from resolver.channeltest.report import Report, run_catalog_test
from resolver.channeltest.templates import Expanded, expand_file, find_templates

__all__ = [
    "CODES",
    "ERROR",
    "WARNING",
    "CatalogDiff",
    "Change",
    "ChannelGraph",
    "Edge",
    "Expanded",
    "Expectation",
    "ExpectationError",
    "Finding",
    "GraphTooLarge",
    "Path",
    "Report",
    "build_channel_graph",
    "channel_graphs",
    "check_expectations",
    "diff_catalogs",
    "expand_file",
    "find_templates",
    "load_expectations",
    "load_for_test",
    "parse_expectations",
    "run_catalog_test",
    "to_dot",
    "to_mermaid",
]
