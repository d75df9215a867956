"""The shared-prefix page tables the calibration backends build (calibrate.backends.common.page_lists) and the
designed set that times them (perfdb.offgrid.shared_prefix): requests of one group point at the same prefix
pages, everything else is distinct, and the set pairs each batch with its distinct-pages twin."""

import json

import pytest

from simperf.calibrate.backends.common import distinct_pages, page_lists
from simperf.perfdb.offgrid import shared_prefix
from simperf.perfdb.shared_reads import PrefixGroups


def test_a_group_shares_its_prefix_pages_and_nothing_else():
    lens = [10, 12, 9, 20]
    shared = PrefixGroups(8, (0, 1, 0, -1))
    pages, distinct = page_lists(lens, 4, shared, list(range(100)))
    assert pages[0][:2] == pages[2][:2]  # group 0's two prefix pages
    assert not set(pages[0][:2]) & set(pages[1])  # group 1 has its own
    assert [len(p) for p in pages] == [3, 3, 3, 5]  # ceil(len / page) each
    everything = [p for row in pages for p in row]
    assert distinct == len(set(everything)) == 3 + 3 + 1 + 5
    assert sorted(set(everything)) == list(range(distinct))  # drawn from the free list in order


def test_without_groups_every_page_is_its_own():
    pages, distinct = page_lists([5, 3], 2, None, list(range(10)))
    assert pages == [[0, 1, 2], [3, 4]] and distinct == 5


@pytest.mark.parametrize(
    ("shared", "message"),
    [
        (PrefixGroups(6, (0, 0)), "not whole pages"),
        (PrefixGroups(8, (0,)), "2 requests"),
        (PrefixGroups(12, (0, 0)), "not more than the prefix"),
    ],
)
def test_a_prefix_that_cannot_be_laid_out_is_refused(shared, message):
    with pytest.raises(ValueError, match=message):
        page_lists([12, 16], 4, shared, list(range(100)))


def test_the_point_key_round_trips():
    shared = PrefixGroups(2048, (1, 0, 1))
    assert PrefixGroups.of({"prefix_groups": shared.to_json()}) == shared
    assert PrefixGroups.of({"kv_len": 5}) is None


def test_the_designed_set_pairs_distinct_and_shared_twins():
    samples = shared_prefix.generate()
    assert len(samples) % 2 == 0
    for distinct, shared in zip(samples[::2], samples[1::2], strict=True):
        assert "prefix_groups" not in distinct["point"]
        spec = PrefixGroups.of(shared["point"])
        lens = json.loads(shared["point"]["kv_lens"])
        assert {k: v for k, v in shared["point"].items() if k != "prefix_groups"} == distinct["point"]
        assert len(spec.group) == len(lens) and min(lens) > spec.prefix_len
        per_group = max(spec.group.count(g) for g in set(spec.group))
        assert per_group == len(spec.group) // len(set(spec.group)) >= 2
    assert samples == shared_prefix.generate()  # seeded: the same set every time


def test_the_pool_holds_exactly_the_distinct_pages():
    lens = [2100, 2200, 2050, 300]
    shared = PrefixGroups(2048, (0, 0, 0, -1))
    distinct = distinct_pages(lens, 16, shared)
    pages, counted = page_lists(lens, 16, shared, list(range(distinct)))
    assert counted == distinct == max(p for row in pages for p in row) + 1
