"""Passes on the graph level: graph-to-stages, graph-to-dataflow."""
