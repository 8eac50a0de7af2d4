"""Benchmarks of the collection on twin racks of growing size: `make bench`.

bench/run.py measures and writes bench/results/<date>.json; bench/report.py
turns the newest results into docs/performance.md and a plot; bench/stats.py
holds the arithmetic both share (medians, ratios to ping, targets, tables).
"""
