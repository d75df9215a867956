"""Adding an attention backend, a model family or a scheduling policy touches only what docs/extending.md names.

Each case runs in a fresh interpreter that adds its rows the way a contributor would edit simperf/capabilities.py
(before anything reads them: the scenario's allowed values are built from the table on import), then goes through
scenario validation, SGLang's defaults, the zoo parser, the op lists, the cost model and the simulator with no
other change. The scheduling-policy case is in tests/test_sim_policies.py (one registered class)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a small Llama-shaped checkpoint of an architecture simperf has never seen
CONFIG = {
    "architectures": ["TestLlamaLikeForCausalLM"],
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "num_hidden_layers": 4,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
}

NEW_ROWS = """
from simperf import capabilities as c

c.register_backend(
    c.BackendCaps(
        "test_gqa",
        frozenset({"hopper"}),
        "runs on Hopper only (test backend)",
        ("flashinfer_fa3",),  # priced by the FA3 tables, as a proxy
        families=frozenset({"dense", "test_dense"}),
        family_refusal="{field}: {backend} serves GQA models; {model} is {family}",
        page_size=16,
        sglang_flag="test_gqa",
    )
)
c.register_family(
    c.FamilyCaps(
        "test_dense",
        "gqa",
        False,
        ("TestLlamaLikeForCausalLM",),
        {"hopper": ("test_gqa", "test_gqa"), "blackwell": ("flashinfer", "flashinfer")},
    )
)
"""

RUN = """
import json, sys
import yaml
from simperf.pipeline import predict
from simperf.scenario.load import load_scenario
from simperf.scenario.resolve import resolve
from simperf.scenario.backends import BackendError

path = sys.argv[1]
scenario = load_scenario(path)
serving, arch, gpu = resolve(scenario)
prediction = predict(scenario)
refused = ""
try:
    resolve(scenario.model_copy(update={"hardware": scenario.hardware.model_copy(update={"gpu": "b200"})}).model_copy(
        update={"serving": scenario.serving.model_copy(update={"attention_backend": "test_gqa"})}))
except BackendError as e:
    refused = str(e)
print(json.dumps({
    "family": arch.family, "backends": [serving.prefill_backend, serving.decode_backend],
    "page_size": serving.page_size, "completed": prediction.result["completed"],
    "ops": sorted({key for _, curve in prediction.cost._chosen.values() for key in [curve.op]}),
    "refused_on_b200": refused,
}))
"""


@pytest.fixture(scope="module")
def new_rows_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ext")
    (tmp / "config.json").write_text(json.dumps(CONFIG))
    (tmp / "s.yaml").write_text(
        textwrap.dedent(
            f"""
            name: extension
            model: {{name: tiny-test, config: {tmp / "config.json"}}}
            hardware: {{gpu: h100, count: 1}}
            workload:
              dataset: {{kind: random, input_len: 256, output_len: 16}}
              num_prompts: 12
              request_rate: 20
            """
        )
    )
    script = tmp / "run.py"
    script.write_text(NEW_ROWS + RUN)
    out = subprocess.run(
        [sys.executable, str(script), str(tmp / "s.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_family_is_parsed_defaulted_priced_and_simulated(new_rows_run):
    assert new_rows_run["family"] == "test_dense"
    assert new_rows_run["completed"] == 12
    # the GQA op-list code ran for it: GEMMs, attention prefill and decode kernels were priced
    assert {"gemm", "attn_mha_prefill", "attn_gqa_decode"} <= set(new_rows_run["ops"])


def test_a_new_backend_is_the_default_validated_and_forces_its_page_size(new_rows_run):
    assert new_rows_run["backends"] == ["test_gqa", "test_gqa"]  # the family's default on Hopper
    assert new_rows_run["page_size"] == 16
    assert "test_gqa runs on Hopper only (test backend)" in new_rows_run["refused_on_b200"]


def test_backend_and_family_names_live_in_the_capability_table_only():
    # what makes the two cases above possible: no other module of the prediction path spells a backend or a
    # family name as a literal to decide something
    from simperf.capabilities import BACKENDS, FAMILIES

    allowed = {"simperf/capabilities.py"}
    # the table side (calibration, table import and diff name kernels as tables spell them) and the checks
    # beside the pipeline
    beside = ("simperf/calibrate/", "simperf/perfdb/", "simperf/validate/", "simperf/accuracy/")
    names = set(FAMILIES) | {b for b in BACKENDS if b not in ("fa3", "flashinfer", "trtllm")}
    found = []
    for path in sorted((ROOT / "simperf").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in allowed or rel.startswith(beside):
            continue
        text = path.read_text()
        for name in names:
            for quoted in (f'"{name}"', f"'{name}'"):
                if quoted in text:
                    found.append(f"{rel}: {quoted}")
    assert not found, found
