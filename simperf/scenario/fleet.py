"""What a user writes for a fleet: replica groups behind SGLang's model gateway (sgl-model-gateway, the router).

Parameter names and defaults are the gateway's (`sglang_router/router_args.py`, `RouterArgs`, at sglang commit
61c660a3); docs/fleet.md cites the policy files each rule comes from. A fleet without `prefill`/`decode` is a
regular one (every replica serves whole requests); with them it is a PD fleet (`--pd-disaggregation`).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, ValidationInfo, model_validator

from simperf.scenario.models import Fraction, HardwareSpec, ServingSpec, _Strict, unused_serving_fields
from simperf.scenario.pd import check_decode_settings, check_prefill_settings

Policy = Literal["round_robin", "random", "power_of_two", "cache_aware", "consistent_hashing", "prefix_hash"]
PrefillPolicy = Literal[
    "round_robin", "random", "power_of_two", "cache_aware", "consistent_hashing", "prefix_hash", "bucket"
]
# policies whose choice never looks at the replicas (only at the request and the router's own history): their
# routing can be decided for the whole stream first and the replicas simulated independently, in parallel
STATE_INDEPENDENT = frozenset({"round_robin", "random", "consistent_hashing", "bucket"})


# which policies read each parameter (simperf/fleet/policies/__init__.py `make_policy`, after the gateway's policy
# files): a parameter no policy in use reads was accepted and changed nothing
PARAMETER_POLICIES: dict[str, frozenset[str]] = {
    "cache_threshold": frozenset({"cache_aware"}),
    "balance_abs_threshold": frozenset({"cache_aware", "bucket"}),
    "balance_rel_threshold": frozenset({"cache_aware", "bucket"}),
    "eviction_interval_secs": frozenset({"cache_aware"}),
    "max_tree_size": frozenset({"cache_aware"}),
    "bucket_adjust_interval_secs": frozenset({"bucket"}),
    "prefix_token_count": frozenset({"prefix_hash"}),
    "load_factor": frozenset({"prefix_hash"}),
    "chars_per_token": frozenset({"cache_aware", "bucket"}),
    "seed": frozenset({"random", "power_of_two", "consistent_hashing", "bucket"}),
}


# validation context key (parse_scenario's `context`): the policies `fleet compare|plan` will run the router under
COMPARED_POLICIES = "compared_policies"


class RouterSpec(_Strict):
    """The gateway's routing policy and its parameters (RouterArgs names and defaults)."""

    policy: Policy = Field(default="cache_aware", description="--policy (the gateway's default: cache_aware)")
    prefill_policy: PrefillPolicy | None = Field(
        default=None, description="--prefill-policy (PD fleets); default: `policy`"
    )
    decode_policy: Policy | None = Field(
        default=None, description="--decode-policy (PD fleets); default: `policy`"
    )
    cache_threshold: Fraction = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="--cache-threshold: prefix match rate above which cache_aware "
        "routes to the best-matching worker",
    )
    balance_abs_threshold: int = Field(
        default=64, ge=0, description="--balance-abs-threshold: load imbalance if max - min exceeds this ..."
    )
    balance_rel_threshold: float = Field(
        default=1.5, gt=0.0, description="--balance-rel-threshold: ... and max exceeds min times this"
    )
    eviction_interval_secs: int = Field(
        default=120,
        ge=0,
        description="--eviction-interval-secs: period of the approximate trees' eviction (0: never)",
    )
    max_tree_size: int = Field(
        default=2**26, ge=1, description="--max-tree-size: characters each worker's approximate tree keeps"
    )
    bucket_adjust_interval_secs: int = Field(
        default=5,
        ge=1,
        description="--bucket-adjust-interval-secs: bucket policy's load window and re-split period",
    )
    prefix_token_count: int = Field(
        default=256, ge=1, description="prefix_hash: leading tokens hashed (PrefixHashConfig default)"
    )
    load_factor: float = Field(
        default=1.25, gt=0.0, description="prefix_hash: a worker above load_factor x the mean load is skipped"
    )
    chars_per_token: float = Field(
        default=4.0,
        gt=0.0,
        description="ESTIMATE: characters per token of the request text; the gateway measures text in characters "
        "(max_tree_size, bucket boundaries), simperf's requests in tokens",
    )
    seed: int | None = Field(
        default=None,
        ge=0,  # numpy's generators take no negative seed
        description="seed of random and power_of_two; default: workload.seed",
    )

    @model_validator(mode="after")
    def _parameters_of_a_policy_in_use(self, info: ValidationInfo) -> RouterSpec:
        if "policy" in self.model_fields_set and self.prefill_policy and self.decode_policy:
            # the gateway's --policy is only the fallback of a PD side without its own ("If not specified, uses the
            # main policy": --prefill-policy / --decode-policy, sgl-model-gateway/bindings/python/sglang_router/
            # router_args.py); `fleet compare --policy` compared identical fleets under different names
            raise ValueError(
                f"policy: a PD router uses it only for a side without its own policy, and prefill_policy "
                f"({self.prefill_policy}) and decode_policy ({self.decode_policy}) are both set, so it would change "
                "nothing (drop it, or one of them)"
            )
        in_use = {self.policy, self.prefill(), self.decode()}
        # `fleet compare|plan --policy P` runs the router under each P with the parameters P reads (with_policy):
        # a parameter only a compared policy reads is in use there (it was refused, so it could not be tuned)
        compared = set((info.context or {}).get(COMPARED_POLICIES, ()))
        for name, readers in PARAMETER_POLICIES.items():
            if name in self.model_fields_set and not readers & (in_use | compared):
                names = sorted(readers)
                readers_text = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
                also = f" and the compared {', '.join(sorted(compared))}" if compared else ""
                raise ValueError(
                    f"{name}: read only by the {readers_text} {'policies' if len(readers) > 1 else 'policy'}; "
                    f"this router uses "
                    f"{', '.join(sorted(in_use))}{also}, so it would change nothing (drop it or change the policy)"
                )
        return self

    def with_policy(self, policy: str) -> dict[str, object]:
        """The router's settings for `policy` in place of its own (fleet compare): what the user set, less the
        parameters only the replaced policy reads (a cache_aware threshold stays with the cache_aware run)."""
        fields = self.model_dump(exclude_unset=True)
        in_use = {policy, fields.get("prefill_policy") or policy, fields.get("decode_policy") or policy}
        kept = {
            k: v for k, v in fields.items() if k not in PARAMETER_POLICIES or PARAMETER_POLICIES[k] & in_use
        }
        return {**kept, "policy": policy}

    def prefill(self) -> str:
        return self.prefill_policy or self.policy

    def decode(self) -> str:
        return self.decode_policy or self.policy


class ReplicaGroup(_Strict):
    """`count` identical servers; `hardware` and `serving` default to the scenario's own."""

    count: int = Field(default=1, ge=1, le=4096, description="servers in this group")
    hardware: HardwareSpec | None = Field(
        default=None, description="GPUs of one server; default: scenario.hardware"
    )
    serving: ServingSpec | None = Field(
        default=None, description="server arguments; default: scenario.serving"
    )
    name: str | None = Field(default=None, description="label in reports; default: group index")


class ScaleStep(_Strict):
    at_s: float = Field(ge=0.0, description="from this time (seconds after the first request) ...")
    replicas: int = Field(ge=1, description="... the fleet should have this many servers")


class AutoscaleSpec(_Strict):
    """A what-if replica-count schedule: servers 0..n-1 are the fleet while n is scheduled. A scale-up registers new
    servers with the router `startup_s` later (booting: weights, CUDA graphs); a scale-down removes the
    highest-numbered servers from the router at once, and they finish what they hold."""

    schedule: list[ScaleStep] = Field(min_length=1, description="steps in time order, the first at_s: 0")
    startup_s: float = Field(
        default=0.0, ge=0.0, description="ESTIMATE you give: scale-up decision to first request served"
    )

    @model_validator(mode="after")
    def _ordered(self) -> AutoscaleSpec:
        if self.schedule[0].at_s != 0.0:
            raise ValueError("schedule: the first step is the fleet at the start, at_s: 0")
        times = [s.at_s for s in self.schedule]
        if any(b <= a for a, b in zip(times, times[1:], strict=False)):
            raise ValueError("schedule: steps must be in strictly increasing at_s")
        counts = [s.replicas for s in self.schedule]
        for i in range(1, len(counts)):
            if counts[i] == counts[i - 1]:
                # the servers registered or booting are already the ones it asks for: the step did nothing
                raise ValueError(
                    f"schedule[{i}]: replicas {counts[i]} repeats the previous step's count, so it changes "
                    "nothing; drop the step"
                )
        if "startup_s" in self.model_fields_set and not any(
            b > a for a, b in zip(counts, counts[1:], strict=False)
        ):
            # only a scale-up boots servers: startup_s was accepted and the run was the same without it
            raise ValueError(
                f"startup_s: delays scale-ups, and this schedule never raises the replica count ({counts[0]} at "
                "the start); drop startup_s or add a step with more replicas"
            )
        return self


class FleetSpec(_Strict):
    """Many SGLang servers behind the gateway: regular `replicas`, or PD `prefill` + `decode` pools."""

    replicas: list[ReplicaGroup] | None = Field(default=None, description="regular servers (whole requests)")
    prefill: list[ReplicaGroup] | None = Field(default=None, description="PD: prefill servers")
    decode: list[ReplicaGroup] | None = Field(default=None, description="PD: decode servers")
    router: RouterSpec = RouterSpec()
    kv_link_gbytes_per_s: float = Field(default=50.0, gt=0, description="PD: KV link bandwidth per GPU, GB/s")
    kv_link_latency_us: float = Field(default=50.0, ge=0, description="PD: per-transfer latency")
    executor: Literal["auto", "serial", "process", "ray"] = Field(
        default="auto",
        description="where replicas of a state-independent policy run (identical results): auto = processes "
        "for large fleets, else this process",
    )
    workers: int | None = Field(
        default=None, ge=1, description="processes (or Ray tasks in flight); default: CPUs"
    )
    ray_address: str | None = Field(default=None, description="Ray cluster address; default: a local Ray")
    timeline_bins: int = Field(default=60, ge=1, le=10_000, description="bins of the per-replica timelines")
    autoscale: AutoscaleSpec | None = Field(
        default=None, description="replica-count schedule over time (regular fleets); the groups are the pool"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> FleetSpec:
        pd = self.prefill is not None or self.decode is not None
        if pd and self.replicas is not None:
            raise ValueError(
                "give either replicas (a regular fleet) or prefill + decode (a PD fleet), not both"
            )
        if pd and (not self.prefill or not self.decode):
            raise ValueError("a PD fleet needs both prefill and decode groups (at least one server each)")
        if not pd and not self.replicas:
            raise ValueError("replicas: give at least one group, e.g. [{count: 8}]")
        if not pd and self.router.prefill_policy is not None:
            raise ValueError(
                "router.prefill_policy applies to PD fleets (prefill + decode); use router.policy"
            )
        if not pd and self.router.decode_policy is not None:
            raise ValueError(
                "router.decode_policy applies to PD fleets (prefill + decode); use router.policy"
            )
        named: dict[str, str] = {}
        for kind in ("replicas", "prefill", "decode"):
            for i, group in enumerate(getattr(self, kind) or []):
                if group.name is None:
                    continue
                # the name is the group's label in the per-server table and the JSON's groups: two groups of one
                # name (or an empty one, shown as the index) could not be told apart there
                if not group.name.strip():
                    raise ValueError(
                        f"{kind}[{i}].name: empty; give a label, or leave name out for the index"
                    )
                if group.name in named:
                    raise ValueError(
                        f"{kind}[{i}].name: {group.name!r} is also {named[group.name]}'s name; give each group its own"
                    )
                named[group.name] = f"{kind}[{i}]"
        if self.autoscale is not None:
            if pd:
                raise ValueError("autoscale: schedules apply to regular fleets (replicas), not PD fleets yet")
            pool = self.num_servers()
            most = max(s.replicas for s in self.autoscale.schedule)
            if most > pool:
                raise ValueError(
                    f"autoscale.schedule asks for {most} replicas; the replica groups hold {pool} "
                    "(the pool it scales in)"
                )
        return self

    @model_validator(mode="after")
    def _no_setting_without_effect(self, info: ValidationInfo) -> FleetSpec:
        # each of these was accepted and changed nothing: a regular fleet ships no KV, a serial run starts no
        # worker, and only the ray executor connects to a cluster
        link = [f for f in ("kv_link_gbytes_per_s", "kv_link_latency_us") if f in self.model_fields_set]
        if link and not (self.prefill is not None or self.decode is not None):
            raise ValueError(f"{', '.join(link)}: applies to PD fleets (prefill + decode), which ship KV")
        if self.workers is not None and self.executor == "serial":
            raise ValueError("workers: executor serial runs every replica in this process; drop one of them")
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError(f"ray_address: applies to executor ray (got executor {self.executor})")
        self._parallel_replicas_possible(info)
        return self

    def _parallel_replicas_possible(self, info: ValidationInfo) -> None:
        """executor (process, ray) and workers spread the servers of a state-independent policy (the router decides
        the whole stream first: docs/fleet.md); a PD fleet or a policy that reads the servers' load runs them
        coupled in this process (fleet/regular.py), so these were accepted and changed nothing."""
        given = [f for f in ("executor", "workers") if f in self.model_fields_set]
        if self.executor in ("auto", "serial"):
            given = [f for f in given if f != "executor"]
        if not given:
            return
        if self.prefill is not None or self.decode is not None:
            raise ValueError(
                f"{', '.join(given)}: a PD fleet's servers run coupled in this process; drop {', '.join(given)}"
            )
        policies = sorted({self.router.policy} | set((info.context or {}).get(COMPARED_POLICIES, ())))
        if not set(policies) & STATE_INDEPENDENT:
            independent = ", ".join(p for p in get_args(Policy) if p in STATE_INDEPENDENT)
            reading = (
                f"the policy {policies[0]} reads"
                if len(policies) == 1
                else f"the policies {', '.join(policies)} read"
            )
            raise ValueError(
                f"{', '.join(given)}: spreads the servers of a state-independent policy ({independent}); "
                f"{reading} the servers' load, so they run coupled in this process; drop {', '.join(given)}"
            )

    @property
    def is_pd(self) -> bool:
        return self.prefill is not None

    def num_servers(self) -> int:
        groups = (self.prefill or []) + (self.decode or []) if self.is_pd else (self.replicas or [])
        return sum(g.count for g in groups)


def check_fleet_layout(scenario) -> None:
    """Every group's layout fits its GPUs; a fleet is not combined with the single-pair `disaggregation`."""
    fleet: FleetSpec = scenario.fleet
    if scenario.disaggregation is not None:
        raise ValueError("fleet and disaggregation: describe a PD fleet with fleet.prefill and fleet.decode")
    groups = [g for kind in ("replicas", "prefill", "decode") for g in getattr(fleet, kind) or []]
    if scenario.serving.model_fields_set and all(g.serving is not None for g in groups):
        # a group's serving replaces the scenario's block whole (it is not merged), so these changed nothing
        raise ValueError(
            f"{unused_serving_fields(scenario.serving)}: not used: every fleet group gives its own serving, "
            "which replaces the scenario's whole block (it is not merged); move them into the groups' serving"
        )
    _check_shared_serving_of_one_side(scenario)
    for kind in ("replicas", "prefill", "decode"):
        for i, group in enumerate(getattr(fleet, kind) or []):
            if kind != "replicas" and group.serving is not None:
                # (a group without its own serving shares the scenario's with the other side's groups)
                check = check_decode_settings if kind == "decode" else check_prefill_settings
                check(group.serving, f"fleet.{kind}[{i}].serving")
            if kind != "replicas" and group.hardware is None:
                continue  # a PD server without its own hardware gets serving.tp GPUs of the scenario's kind
            hardware = group.hardware or scenario.hardware
            serving = group.serving or scenario.serving
            if serving.tp > hardware.count:
                raise ValueError(
                    f"fleet.{kind}[{i}]: serving.tp ({serving.tp}) needs at least that many GPUs; "
                    f"hardware.count is {hardware.count}"
                )


def _check_shared_serving_of_one_side(scenario) -> None:
    """A PD fleet whose every group of one side gives its own serving: the scenario's serving is then the other
    side's alone, and a field that side never reads (chunked_prefill_size for decode servers) changed nothing."""
    fleet: FleetSpec = scenario.fleet
    if not fleet.is_pd:
        return
    for side, other, check in (
        ("prefill", "decode", check_decode_settings),
        ("decode", "prefill", check_prefill_settings),
    ):
        if all(g.serving is not None for g in getattr(fleet, side)):
            try:
                check(scenario.serving, "serving")
            except ValueError as e:
                raise ValueError(
                    f"{e} (every fleet.{side} group gives its own serving, so the scenario's is the {other} "
                    "servers' alone)"
                ) from None


def fleet_gpus(scenario) -> int:
    """GPUs of every server of the scenario's fleet (a PD server without its own hardware spans serving.tp)."""
    fleet: FleetSpec = scenario.fleet
    total = 0
    for kind in ("replicas", "prefill", "decode"):
        for group in getattr(fleet, kind) or []:
            if group.hardware is not None:
                per_server = group.hardware.count
            elif kind == "replicas":
                per_server = scenario.hardware.count
            else:
                per_server = (group.serving or scenario.serving).tp
            total += group.count * per_server
    return total
