"""bench/metadata's measures: the bytes of cached objects, counted once each."""

from __future__ import annotations

import sys

from bench.metadata import deep_size, table


def test_deep_size_counts_each_object_once() -> None:
    shared = "x" * 1000
    a = {"metadata": {"name": shared}}
    b = {"metadata": {"name": shared}}
    alone = deep_size([a])
    # b adds its own two dicts and nothing for the string a already holds.
    assert deep_size([a, b]) == alone + sys.getsizeof(b) + sys.getsizeof(b["metadata"])
    assert deep_size([a, a]) == alone
    assert alone >= sys.getsizeof(shared) + sys.getsizeof(a) + sys.getsizeof(a["metadata"])


def test_deep_size_follows_lists_and_bytes() -> None:
    fields = b"{" + b"f" * 500 + b"}"
    obj = {"managedFields": [{"fieldsV1": fields}]}
    assert deep_size([obj]) > sys.getsizeof(fields)


def test_table_compares_metadata_only_with_full() -> None:
    def point(variant: str, rss: float, size: float) -> dict[str, object]:
        return {
            "kind": "pods",
            "variant": variant,
            "objects": 2000,
            "rss_bytes_per_object": rss,
            "object_bytes_per_object": size,
            "list_body_bytes_per_object": 1.0,
            "sync_wall_seconds": 0.1,
            "sync_cpu_seconds": 0.1,
        }

    text = table([point("full", 10_000, 8_000), point("metadata", 4_000, 2_000)])
    assert "| pods | 2,000 | metadata | 4,000 | 2,000 |" in text
    assert "- pods, metadata against full: 40% of the RSS, 25% of the objects' bytes" in text
