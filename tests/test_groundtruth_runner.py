"""The ground-truth runner end to end on a CPU: a stand-in SGLang server and bench_serving (tests/fixtures/
fake_sglang) speak the same HTTP and module seams as SGLang 0.5.17, so what is tested is the runner users run:
plans, server start and reuse, one bench_serving child per server, collection, resume, failures, deadlines."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simperf.groundtruth.collect import match_server_records, scheduler_state_delta
from simperf.groundtruth.plan import PlanError, flags_to_argv, load_plan

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "fixtures" / "fake_sglang"
NVIDIA_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=*) echo "NVIDIA H100 80GB HBM3, 81559, 580.159.04";;
  *) echo "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |";;
esac
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def host(tmp_path):
    """A fake GPU host: nvidia-smi on PATH, the stand-in SGLang importable, a free port."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(NVIDIA_SMI)
    smi.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": f"{FAKE}:{REPO}",
    }
    return env, _free_port()


def _plan(tmp_path: Path, servers: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "defaults:\n  client: {dataset-name: random, random-range-ratio: 1, disable-tqdm: true}\n"
        f"servers:\n{servers}"
    )
    return path


def _run(env, port, plan, tmp_path, *extra):
    cmd = [
        sys.executable,
        "-m",
        "simperf.groundtruth",
        "run",
        str(plan),
        "--out",
        str(tmp_path / "corpus"),
        "--work",
        str(tmp_path / "work"),
        "--port",
        str(port),
        *extra,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)


SERVER = """  - name: qwen3-8b-fake
    model: qwen3-8b
    server: {token-ms: 0.5, prefill-ms: 2}
    runs:
      - {name: c2, client: {random-input-len: 32, random-output-len: 6, max-concurrency: 2, num-prompts: 6}, expected_s: 20}
      - {name: r50, client: {random-input-len: 16, random-output-len: 4, request-rate: 50, num-prompts: 5}, expected_s: 20}
"""


def test_a_plan_records_every_run_with_client_and_server_times_and_resumes(host, tmp_path):
    env, port = host
    plan = _plan(tmp_path, SERVER)
    first = _run(env, port, plan, tmp_path, "--stop-after")
    assert first.returncode == 0, first.stderr[-3000:]
    corpus = tmp_path / "corpus"
    for run in ("c2", "r50"):
        run_dir = corpus / "h100" / "qwen3-8b-fake" / run
        status = json.loads((run_dir / "run.json").read_text())
        assert status["status"] == "ok"
        assert status["requests_with_server_times"] == status["requests"] > 0
        bench = json.loads((run_dir / "bench.json").read_text())
        assert "generated_texts" not in bench and "server_info" not in bench and "itls" not in bench
        table = pq.read_table(run_dir / "requests.parquet").to_pydict()
        assert all(len(itl) == out - 1 for itl, out in zip(table["itl_us"], table["output_len"], strict=True))
        # the client sends before the server receives, which is before the first chunk goes out
        for send, recv, sent in zip(
            table["client_send_s"],
            table["server_received_s"],
            table["server_first_chunk_sent_s"],
            strict=True,
        ):
            assert send - 0.05 <= recv <= sent
        assert "sglang.bench_serving" in (run_dir / "bench_cmd.txt").read_text()
    facts = json.loads((corpus / "h100" / "qwen3-8b-fake" / "server_facts.json").read_text())
    assert facts["startup"]["max_total_num_tokens"] == 123456
    assert "sglang.launch_server" in (corpus / "h100" / "qwen3-8b-fake" / "server_cmd.txt").read_text()
    assert pq.read_table(corpus / "index.parquet").num_rows == 2
    again = _run(env, port, plan, tmp_path, "--stop-after")
    assert again.returncode == 0 and '"skipped": 2' in again.stderr


def test_a_server_that_dies_fails_its_runs_with_its_log_and_the_plan_goes_on(host, tmp_path):
    env, port = host
    dying = SERVER.replace("qwen3-8b-fake", "dies").replace("prefill-ms: 2}", "prefill-ms: 2, die-after: 3}")
    plan = _plan(tmp_path, dying + SERVER)
    result = _run(env, port, plan, tmp_path, "--stop-after")
    assert result.returncode == 1
    corpus = tmp_path / "corpus" / "h100"
    statuses = {run: json.loads((corpus / "dies" / run / "run.json").read_text()) for run in ("c2", "r50")}
    # c2 lost requests when the server went (kept, but failed); r50 never had a server
    assert statuses["c2"]["status"] == "failed" and "requests failed" in statuses["c2"]["reason"]
    assert statuses["r50"]["status"] == "failed" and statuses["r50"]["reason"] == "server died"
    assert "dying on purpose" in statuses["r50"]["log_tail"]
    # the next server of the plan still ran
    assert json.loads((corpus / "qwen3-8b-fake" / "c2" / "run.json").read_text())["status"] == "ok"


def test_a_failing_bench_run_is_recorded_and_the_next_run_still_runs(host, tmp_path):
    env, port = host
    failing = SERVER.replace("num-prompts: 6}", "num-prompts: 6, fail: true}")
    result = _run(env, port, _plan(tmp_path, failing), tmp_path, "--stop-after")
    assert result.returncode == 1
    runs = tmp_path / "corpus" / "h100" / "qwen3-8b-fake"
    failed = json.loads((runs / "c2" / "run.json").read_text())
    assert failed["status"] == "failed" and "on purpose" in failed["log_tail"]
    assert json.loads((runs / "r50" / "run.json").read_text())["status"] == "ok"


def test_a_run_that_would_overrun_the_deadline_is_left_for_the_next_call(host, tmp_path):
    env, port = host
    slow = SERVER.replace(
        "expected_s: 20}\n      - {name: r50", "expected_s: 20}\n      - {name: r50"
    ).replace("num-prompts: 5}, expected_s: 20}", "num-prompts: 5}, expected_s: 500}")
    result = _run(env, port, _plan(tmp_path, slow), tmp_path, "--deadline", "90", "--stop-after")
    assert result.returncode == 0, result.stderr[-2000:]
    runs = tmp_path / "corpus" / "h100" / "qwen3-8b-fake"
    assert (runs / "c2" / "run.json").exists() and not (runs / "r50" / "run.json").exists()
    assert '"pending": 1' in result.stderr


def test_no_gpu_is_a_one_line_error(tmp_path):
    plan = _plan(tmp_path, SERVER)
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "simperf.groundtruth",
            "run",
            str(plan),
            "--out",
            str(tmp_path / "c"),
            "--work",
            str(tmp_path / "w"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "nvidia-smi" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").rglob("run.json"))


@pytest.mark.parametrize(
    "servers, fragment",
    [
        ("  - {name: s, model: m, server: {--tp-size: 2}, runs: [{name: r}]}\n", "without leading dashes"),
        ("  - {name: s, model: m, server: {port: 1}, runs: [{name: r}]}\n", "set by the runner"),
        ("  - {name: s, model: m, runs: [{name: r}, {name: r}]}\n", "appears twice"),
        ("  - {name: s, model: m, runs: []}\n", "servers.0.runs"),
        ("  - {name: 'a b', model: m, runs: [{name: r}]}\n", "servers.0.name"),
        ("  - {name: s, model: m, runs: [{name: r, clinet: {}}]}\n", "servers.0.runs.0.clinet"),
        ("  - {name: s, model: m, runs: [{name: r, client: {dataset-path: x}}]}\n", "set by the runner"),
        (
            "  - {name: s, model: m, runs: [{name: r, client: {dataset-name: mooncake}}]}\n",
            "needs its own file",
        ),
        (
            "  - {name: s, model: m, runs: [{name: r, client: {dataset-name: custom}}]}\n",
            "needs its own file",
        ),
    ],
)
def test_bad_plans_name_the_field(tmp_path, servers, fragment):
    with pytest.raises(PlanError, match=fragment.replace(".", r"\.").replace("{", r"\{")):
        load_plan(_plan(tmp_path, servers))


@pytest.mark.parametrize("dataset", ["mooncake", "custom"])
def test_a_run_of_its_own_file_names_it_after_the_runners_prompt_source(tmp_path, dataset):
    """bench_serving replays a Mooncake trace at its timestamps, and its `custom` dataset sends the conversations of
    the plan's own file (the straggler check's prompts): the plan gives the file, and its --dataset-path comes after
    the runner's (argparse keeps the last)."""
    plan = load_plan(
        _plan(
            tmp_path,
            f"  - {{name: s, model: m, runs: [{{name: r, client: {{dataset-name: {dataset}, "
            "dataset-path: /tmp/t.jsonl}}]}\n",
        )  # fmt: skip
    )
    argv = flags_to_argv(plan.client_flags(plan.servers[0].runs[0]))
    assert argv[argv.index("--dataset-path") + 1] == "/tmp/t.jsonl"


def test_flags_render_as_sglang_spells_them():
    assert flags_to_argv(
        {
            "tp-size": 2,
            "enable-metrics": True,
            "disable-radix-cache": False,
            "cuda-graph-bs": [1, 2],
            "mem-fraction-static": 0.85,
            "x": None,
        }
    ) == ["--tp-size", "2", "--enable-metrics", "--cuda-graph-bs", "1", "2", "--mem-fraction-static", "0.85"]


def test_the_decode_step_times_of_a_run_are_what_the_scheduler_appended_during_it():
    before = {"internal_states": [{"step_time_dict": {"1": [0.5, 0.1], "8": [0.2]}}]}
    after = {"internal_states": [{"step_time_dict": {"1": [0.5, 0.1, 0.11], "8": [0.2], "16": [0.3]}}]}
    assert scheduler_state_delta(before, after)["decode_step_time_s"] == {"1": [0.11], "16": [0.3]}
    restarted = {"internal_states": [{"step_time_dict": {"1": [0.9]}}]}  # not a continuation: a new server
    assert scheduler_state_delta(before, restarted)["decode_step_time_s"] == {"1": [0.9]}


def test_server_records_join_the_client_records_of_the_same_request_in_send_order():
    client = [
        {"send_s": 10.0, "prompt_len": 5},
        {"send_s": 10.001, "prompt_len": 5},
        {"send_s": 9.0, "prompt_len": 7},
    ]
    server = [
        {"request_received_ts": 9.002, "prompt_tokens": 7},
        {"request_received_ts": 10.003, "prompt_tokens": 5},
        {"request_received_ts": 10.004, "prompt_tokens": 5},
    ]
    matched = match_server_records(client, server)
    assert [m["request_received_ts"] for m in matched] == [10.003, 10.004, 9.002]


def test_a_model_directory_rewritten_for_another_model_gets_that_models_tokenizer(tmp_path):
    # the tokenizer was kept whenever one existed: Qwen3's 151,936 words stayed under Llama-3.1's 128,256-row
    # embedding after `modeldir llama-3.1-8b` reused a Qwen3 directory
    from simperf.groundtruth import modeldir

    zoo = REPO / "simperf" / "models" / "zoo"
    for model, words in (("qwen3-8b", 151936), ("llama-3.1-8b", 128256)):
        modeldir.write_model_dir(modeldir.source_config(model, zoo), tmp_path / "m")
        tokenizer = json.loads((tmp_path / "m" / "tokenizer.json").read_text())
        assert len(tokenizer["model"]["vocab"]) == words


def test_a_gpu_the_catalogue_does_not_describe_is_filed_under_its_own_name():
    """An H100 PCIe was filed under h100 and `simperf accuracy` scored its runs as the SXM part (3.35 vs 2.0 TB/s)."""
    from simperf.groundtruth.runner import gpu_key

    assert gpu_key("NVIDIA H200") == "h200" and gpu_key("NVIDIA H100 80GB HBM3") == "h100"
    assert gpu_key("NVIDIA H100 PCIe") == "nvidia-h100-pcie"
    assert gpu_key("NVIDIA H200 NVL") == "nvidia-h200-nvl"
    assert gpu_key("NVIDIA A100-SXM4-80GB") == "nvidia-a100-sxm4-80gb"


def test_a_draft_model_is_written_beside_the_model_and_passed_to_the_server(host, tmp_path):
    """A speculative server's plan names its draft (`draft_model`): the runner writes the draft's directory with the
    same random-weight setup as the target's and passes --speculative-draft-model-path, and the recorded command
    says how to write it again (groundtruth/plans/h200-check-eagle.yaml)."""
    env, port = host
    draft = REPO / "groundtruth" / "plans" / "llama-3.1-8b-eagle-draft.json"
    plan = _plan(
        tmp_path,
        f"""  - name: eagle-fake
    model: llama-3.1-8b
    draft_model: {draft}
    server: {{token-ms: 0.5, prefill-ms: 2, speculative-algorithm: EAGLE}}
    runs:
      - {{name: c2, client: {{random-input-len: 16, random-output-len: 4, max-concurrency: 2, num-prompts: 2}}, expected_s: 20}}
""",
    )
    done = _run(env, port, plan, tmp_path, "--stop-after")
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(
        (tmp_path / "work" / "models" / "llama-3.1-8b-eagle-draft" / "config.json").read_text()
    )
    assert written["architectures"] == ["LlamaForCausalLMEagle"] and written["num_hidden_layers"] == 1
    cmd = (tmp_path / "corpus" / "h100" / "eagle-fake" / "server_cmd.txt").read_text()
    assert (
        f"--speculative-draft-model-path {tmp_path / 'work' / 'models' / 'llama-3.1-8b-eagle-draft'}" in cmd
    )
    assert f"# draft model directory: `simperf groundtruth modeldir {draft} DIR`" in cmd


@pytest.mark.parametrize("field", ["model", "draft_model"])
def test_a_model_that_does_not_resolve_stops_the_plan_in_one_line_before_anything_starts(tmp_path, field):
    models = {"model": "llama-3.1-8b", "draft_model": "llama-3.1-8b"} | {field: "no-such-model"}
    plan = _plan(
        tmp_path,
        f"  - {{name: s, model: {models['model']}, draft_model: {models['draft_model']}, runs: [{{name: r}}]}}\n",
    )
    done = _run(dict(os.environ), _free_port(), plan, tmp_path)
    assert done.returncode == 2  # the CLI's usage-error code (groundtruth/cli.py _fail)
    assert done.stderr.strip().splitlines() == [
        f"error: servers[0].{field}: model 'no-such-model': neither a zoo name "
        + done.stderr.split("neither a zoo name ", 1)[1].strip()
    ]
    assert not (tmp_path / "work").exists()
