"""Fleets through the CLI: predict (text, JSON, per-request rows), policy comparison, planning by simulation."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from simperf.cli import app
from simperf.fleet.plan import Trial, _fewest

runner = CliRunner()

FLEET = """
name: tiny-fleet
model: {name: qwen3-8b}
hardware: {gpu: h100, count: 1}
fleet:
  replicas: [{count: 3}]
  router: {policy: cache_aware}
workload:
  dataset: {kind: multi_turn, num_conversations: 12, turns: 3, system_prompt_len: 512, input_len: 200,
            output_len: 40, turn_interval_s: 2}
  request_rate: 6
"""


@pytest.fixture
def fleet_file(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET)
    return path


def test_predict_prints_the_fleet_block_and_a_row_per_server(fleet_file):
    result = runner.invoke(app, ["predict", str(fleet_file)])
    assert result.exit_code == 0, result.output
    assert "Serving Benchmark Result (fleet)" in result.output
    assert "Router policy:" in result.output and "cache_aware" in result.output
    assert "per server" in result.output and "Successful requests:" in result.output


def test_servers_holding_more_gpus_than_their_layout_uses_are_reported_idle(tmp_path):
    """hardware.count 4 with serving.tp 1 counted 4 GPUs per server in the fleet's total without a word (a single
    server says 'Idle GPUs'); the fleet now says it too, and a fleet that uses every GPU says nothing."""
    path = tmp_path / "idle.yaml"
    path.write_text(FLEET.replace("count: 1}", "count: 4}"))
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 0, result.output
    assert "Idle GPUs:" in result.output and "3 of 4 per server" in result.output
    path.write_text(FLEET)
    assert "Idle GPUs" not in runner.invoke(app, ["predict", str(path)]).output


def test_timeline_bins_where_no_timeline_is_shown_says_it_changes_nothing(tmp_path):
    """fleet.timeline_bins sizes the per-replica timelines of predict's JSON and fleet compare's charts; the text
    output, fleet compare without --charts and fleet plan show none, and the field was read by nothing there."""
    path = tmp_path / "bins.yaml"
    path.write_text(
        FLEET.replace("router: {policy: cache_aware}", "router: {policy: cache_aware}\n  timeline_bins: 7")
    )
    note = "note: fleet.timeline_bins: sizes the per-replica timelines"
    for args in (["predict", str(path)], ["fleet", "compare", str(path), "--policy", "round_robin"]):
        result = runner.invoke(app, args, terminal_width=400)
        assert result.exit_code == 0, result.output
        assert note in result.output, args
    result = runner.invoke(app, ["predict", str(path), "-o", "json"])
    assert (
        note not in result.output
        and len(json.loads(result.stdout)["simperf"]["fleet"]["timelines"]["bin_edges_s"]) == 8
    )


def test_compare_and_plan_without_policy_say_the_scenarios_own_policy_is_not_run(tmp_path):
    """Without --policy, fleet compare and fleet plan run their default policies: a scenario's router.policy
    outside them (random here, with its seed) was left out without a word."""
    path = tmp_path / "random.yaml"
    path.write_text(FLEET.replace("{policy: cache_aware}", "{policy: random, seed: 4}"))
    for args, verb in (
        (["fleet", "compare", str(path)], "compared"),
        (["fleet", "plan", str(path), "--rate", "6", "--sla", "ttft.p90 <= 10s", "--max-replicas", "1"], "planned with"),
        (["fleet", "compare", str(path), "--policy", "round_robin"], None),
    ):  # fmt: skip
        result = runner.invoke(app, args, terminal_width=400)
        assert result.exit_code in (0, 1), result.output
        assert ("note: fleet.router.policy: random is not" in result.output) == (verb is not None), (
            result.output
        )
        assert (
            verb is None
            or f"random is not {verb}" in result.output
            and "give --policy random" in result.output
        )


def test_predict_json_of_a_fleet_says_breakdown_is_per_server(fleet_file):
    """--breakdown with a fleet: the text output says per-op step times are per server; -o json left it out of the
    JSON without a word."""
    result = runner.invoke(app, ["predict", str(fleet_file), "-o", "json", "--breakdown"], terminal_width=400)
    assert result.exit_code == 0, result.output
    assert "breakdown" not in json.loads(result.stdout)["simperf"]
    assert "note: --breakdown: per-op step times are per server" in result.stderr


def test_predict_json_and_rows_agree(fleet_file, tmp_path):
    rows_path = tmp_path / "rows.parquet"
    result = runner.invoke(app, ["predict", str(fleet_file), "-o", "json", "--requests", str(rows_path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    fleet = data["simperf"]["fleet"]
    assert data["completed"] == 36 and fleet["servers"] == 3 and fleet["router"]["policy"] == "cache_aware"
    assert len(fleet["timelines"]["in_flight"]) == 3
    rows = pq.read_table(rows_path).to_pydict()
    assert sorted(rows["request_id"]) == list(range(36))
    assert sum(s["routed"] for s in fleet["per_server"]) == 36
    ttft_ms = sorted(1000 * t for t in rows["ttft_s"])
    assert ttft_ms[len(ttft_ms) // 2] == pytest.approx(data["median_ttft_ms"], rel=0.05)


def compare_args(fleet_file) -> list[str]:
    """`simperf fleet compare` of two policies, JSON on stdout."""
    return [
        "fleet",
        "compare",
        str(fleet_file),
        "--policy",
        "round_robin",
        "--policy",
        "cache_aware",
        "-o",
        "json",
    ]


def test_compare_lists_each_policy(fleet_file, tmp_path):
    result = runner.invoke(app, compare_args(fleet_file))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["policy"] for r in rows] == ["round_robin", "cache_aware"]
    assert all(0 <= r["prefix_hit_rate"] <= 1 for r in rows)


def test_compare_of_one_server_says_every_policy_routes_alike(fleet_file, tmp_path):
    """One server (or one a side of a PD fleet): every policy sends it every request, so the rows came out the same
    and read as policies that make no difference."""
    note = "note: fleet: one server: every router policy sends every request to it, so the policies compare the same"
    several = runner.invoke(app, compare_args(fleet_file), terminal_width=400)
    assert several.exit_code == 0 and "note: fleet: one" not in several.stderr, several.output
    one = tmp_path / "one.yaml"
    one.write_text(FLEET.replace("[{count: 3}]", "[{count: 1}]"))
    result = runner.invoke(app, compare_args(one), terminal_width=400)
    assert result.exit_code == 0 and note in result.stderr, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["median_ttft_ms"] == rows[1]["median_ttft_ms"]


def test_compare_labels_a_pd_fleet_with_what_each_side_ran(tmp_path):
    """A PD router with prefill_policy only: --policy set the decode side alone, yet each row was labelled with
    --policy, as if both sides ran it."""
    scenario = {
        "name": "pd",
        "model": {"name": "qwen3-8b"},
        "hardware": {"gpu": "h100", "count": 1},
        "fleet": {"prefill": [{"count": 1}], "decode": [{"count": 2}], "router": {"prefill_policy": "cache_aware"}},
        "workload": {"dataset": {"kind": "random", "input_len": 128, "output_len": 8}, "num_prompts": 8,
                     "request_rate": 5},
    }  # fmt: skip
    path = tmp_path / "pd.yaml"
    path.write_text(yaml.safe_dump(scenario))
    args = ["fleet", "compare", str(path), "--policy", "round_robin", "--policy", "cache_aware", "-o", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    # both sides on cache_aware is just cache_aware
    assert [r["policy"] for r in rows] == ["prefill cache_aware, decode round_robin", "cache_aware"]
    assert rows[0]["router"]["prefill"]["policy"] == "cache_aware"
    assert rows[0]["router"]["decode"]["policy"] == "round_robin"


def test_compare_keeps_a_policys_own_parameters_with_that_policy(fleet_file):
    """A cache_aware threshold in the file is refused on a round_robin router (it would change nothing), so fleet
    compare leaves it out of the round_robin run and keeps it for the cache_aware one, where it moves the result."""
    from simperf.scenario.fleet import RouterSpec

    router = RouterSpec(policy="cache_aware", cache_threshold=0.9)
    assert router.with_policy("round_robin") == {"policy": "round_robin"}
    assert router.with_policy("cache_aware") == {"policy": "cache_aware", "cache_threshold": 0.9}
    base = json.loads(runner.invoke(app, compare_args(fleet_file)).stdout)
    result = runner.invoke(app, [*compare_args(fleet_file), "--set", "fleet.router.cache_threshold=0.99"])
    assert result.exit_code == 0, result.output
    rows = {r["policy"]: r for r in json.loads(result.stdout)}
    assert rows["round_robin"] == {r["policy"]: r for r in base}["round_robin"]
    assert (
        rows["cache_aware"]["prefix_hit_rate"]
        != {r["policy"]: r for r in base}["cache_aware"]["prefix_hit_rate"]
    )


def test_compare_shows_its_progress_on_a_terminal_and_keeps_stdout_clean(fleet_file, monkeypatch):
    """Each policy is a whole fleet simulation (9-17 s for five on a recorded trace): a bar over them on stderr,
    none with --quiet, and stdout only the JSON."""
    from rich.console import Console

    import simperf.progress as progress

    terminal = Console(stderr=True, force_terminal=True, width=100)
    monkeypatch.setattr(progress, "stderr_console", lambda: terminal)
    args = compare_args(fleet_file)
    with terminal.capture() as shown:
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [r["policy"] for r in json.loads(result.stdout)] == ["round_robin", "cache_aware"]
    assert "fleet compare" in shown.get()
    with terminal.capture() as shown:
        result = runner.invoke(app, [*args, "--quiet"])
    assert result.exit_code == 0 and "fleet compare" not in shown.get()


def test_compare_tunes_a_parameter_only_a_compared_policy_reads(fleet_file):
    """`--policy prefix_hash --set fleet.router.load_factor=2` on a cache_aware file was refused ("read only by the
    prefix_hash policy; this router uses cache_aware"): the router was checked against the file's policy before
    --policy applied, so a compare could not tune the policy it compared. A parameter that no compared policy and
    not the file's own reads is still refused."""
    args = [
        "fleet",
        "compare",
        str(fleet_file),
        "--policy",
        "prefix_hash",
        "--policy",
        "round_robin",
        "-o",
        "json",
    ]
    base = {r["policy"]: r for r in json.loads(runner.invoke(app, args).stdout)}
    result = runner.invoke(app, [*args, "--set", "fleet.router.load_factor=1.01"])
    assert result.exit_code == 0, result.output
    tuned = {r["policy"]: r for r in json.loads(result.stdout)}
    assert tuned["round_robin"] == base["round_robin"]  # the parameter stays with the policy that reads it
    assert tuned["prefix_hash"] != base["prefix_hash"]
    refused = runner.invoke(
        app,
        [
            "fleet",
            "compare",
            str(fleet_file),
            "--policy",
            "round_robin",
            "--set",
            "fleet.router.load_factor=2",
        ],
    )
    assert refused.exit_code == 2
    assert "load_factor" in refused.output and "compared round_robin" in refused.output


def test_compare_names_a_bad_override_and_a_bad_policy(fleet_file):
    result = runner.invoke(app, ["fleet", "compare", str(fleet_file), "--set", "fleet.router.policy"])
    assert result.exit_code == 2 and "KEY.PATH=VALUE" in result.output
    result = runner.invoke(
        app, ["fleet", "compare", str(fleet_file), "--set", "fleet.router.policy=least_work"]
    )
    assert result.exit_code == 2 and "fleet.router.policy" in result.output
    result = runner.invoke(app, ["fleet", "compare", str(fleet_file), "--policy", "bucket"])
    assert result.exit_code == 2 and "--policy 'bucket'" in result.output


def test_plan_on_a_fleet_scenario_simulates_the_fleet(fleet_file):
    result = runner.invoke(
        app, ["plan", str(fleet_file), "--rate", "6", "--sla", "ttft.p90 <= 5s", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["winner"]["replicas"] >= 1
    for policy in data["policies"]:
        found = policy["replicas"]
        if found is not None:
            by_n = {t["replicas"]: t["meets_sla"] for t in policy["trials"]}
            assert by_n[found] and (found == 1 or not by_n[found - 1])


# the tiny fleet on one replica, with an open-loop workload of four prompts
BURST_FLEET = FLEET.split("workload:")[0].replace("[{count: 3}]", "[{count: 1}]") + (
    "workload:\n  dataset: {kind: random, input_len: 256, output_len: 32}\n  num_prompts: 4\n  request_rate: 1\n"
)


def test_a_plan_whose_requests_all_arrive_in_a_burst_says_so(tmp_path):
    """Four prompts at 1e9 req/s arrive in 4 ns: one replica 'served 1e9 req/s' within the SLA, without a word.
    The plan still stands for that burst; the note says it is not a sustained load, and a plan over a long enough
    window says nothing."""
    path = tmp_path / "burst.yaml"
    path.write_text(BURST_FLEET)
    args = ["fleet", "plan", str(path), "--sla", "ttft.p90 <= 5s", "--policy", "round_robin"]
    burst = runner.invoke(app, [*args, "--rate", "1e9"])
    assert burst.exit_code == 0, burst.output
    assert "this plans one burst, not a sustained load" in burst.stderr
    sustained = runner.invoke(app, [*args, "--rate", "0.5"])
    assert sustained.exit_code == 0, sustained.output
    assert "burst" not in sustained.stderr


def _trials(meets_from: int | None, attainment=lambda n: min(n / 10, 1.0)):
    calls = []  # distinct replica counts simulated, in order (plan_fleet memoises trials the same way)

    def trial(n):
        if n not in calls:
            calls.append(n)
        ok = meets_from is not None and n >= meets_from
        return Trial("p", n, n, ok, attainment(n), {}, None)

    return trial, calls


def test_search_finds_the_fewest_replicas_meeting_the_sla():
    trial, calls = _trials(meets_from=11)
    assert _fewest(trial, 64) == 11
    assert calls == [1, 2, 4, 8, 16, 12, 10, 11]  # doubling, then bisection between 8 and 16


def test_search_gives_up_when_more_replicas_stop_helping():
    trial, calls = _trials(meets_from=None, attainment=lambda n: 0.6)
    assert _fewest(trial, 64) is None
    assert max(calls) < 64  # stopped on the plateau, not at the limit


def test_a_sweep_over_router_policies_counts_every_servers_gpus(tmp_path):
    import polars as pl

    sweep = tmp_path / "policies.yaml"
    sweep.write_text(
        """
name: policies
base:
  model: {name: qwen3-8b}
  hardware: {gpu: h100, count: 2}
  serving: {tp: 2}
  fleet: {replicas: [{count: 3}]}
  workload:
    dataset: {kind: multi_turn, num_conversations: 8, turns: 2, input_len: 100, output_len: 20, turn_interval_s: 1}
    request_rate: 4
axes:
  fleet.router.policy: [round_robin, cache_aware]
"""
    )
    out = tmp_path / "policies.parquet"
    result = runner.invoke(app, ["sweep", str(sweep), "--executor", "serial", "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = pl.read_parquet(out)
    assert table["status"].to_list() == ["ok", "ok"]
    assert table["num_gpus"].to_list() == [6, 6]  # 3 servers x TP2
    assert (table["output_throughput_per_gpu"] * 6 - table["output_throughput"]).abs().max() < 1e-9
    # the report re-simulates the planned fleets: read as one server's prediction, it ended in "internal error
    # (AttributeError: 'FleetPrediction' object has no attribute 'cost')"
    html = tmp_path / "policies.html"
    result = runner.invoke(app, ["report", str(out), "-o", str(html), "--rate", "8", "-q"])
    assert result.exit_code == 0, result.output
    assert "Check: the planned configurations" in html.read_text()


def test_a_fleet_whose_groups_give_their_hardware_needs_none_of_its_own(tmp_path):
    """The top-level hardware was required and then unused when every group gave its own (a sweep over
    hardware.gpu gave identical points): such a fleet now runs without it and refuses a different one."""
    text = FLEET.replace("hardware: {gpu: h100, count: 1}\n", "").replace(
        "replicas: [{count: 3}]", "replicas: [{count: 3, hardware: {gpu: h100, count: 1}}]"
    )
    path = tmp_path / "own.yaml"
    path.write_text(text)
    assert "\nhardware" not in text and "hardware: {gpu: h100" in text
    result = runner.invoke(app, ["predict", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    refused = runner.invoke(app, ["predict", str(path), "--set", "hardware.gpu=h200"])
    assert refused.exit_code != 0 and "every fleet group gives its own hardware" in refused.output
