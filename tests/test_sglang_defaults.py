"""SGLang's numbers are named once, each with the SGLang version and source file it comes from."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import simperf.sglang_defaults as defaults
from simperf.hardware.catalog import get_gpu
from simperf.scenario.resolve import default_chunked_prefill_size, default_cuda_graph_max_bs

SOURCE = Path(defaults.__file__).read_text()


def _constant_blocks():
    """(name, its paragraph: the lines from the blank line above it down to it) for each module-level constant."""
    lines = SOURCE.splitlines()
    for node in ast.parse(SOURCE).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            i = node.lineno - 2
            while i >= 0 and lines[i].strip():
                i -= 1
            yield target.id, "\n".join(lines[i + 1 : node.lineno])


def test_every_constant_cites_an_sglang_version_and_file():
    blocks = list(_constant_blocks())
    assert len(blocks) >= 20
    uncited = [name for name, block in blocks if not (re.search(r"0\.5\.\d+", block) and "srt/" in block)]
    assert not uncited, uncited


def test_memory_table_gives_sglang_0_5_17_defaults_for_the_catalogue():
    # _handle_gpu_memory_settings: H100 and H200 8192 / 256 (TP < 4) / 512; B200 16384 / 512
    assert [default_chunked_prefill_size(get_gpu(g)) for g in ("h100", "h200", "b200")] == [8192, 8192, 16384]
    assert [default_cuda_graph_max_bs(get_gpu("h100"), tp) for tp in (1, 4)] == [256, 512]
    assert default_cuda_graph_max_bs(get_gpu("b200"), 1) == 512
