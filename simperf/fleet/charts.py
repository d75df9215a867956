"""Fleet charts (altair): replica load over time, prefix-cache hit rate per policy, SLA attainment vs replicas.

Builders take plain data (a fleet prediction's timelines, plan trials) and return charts; `save_chart` from
`simperf.report.charts` writes them. Nothing here runs a simulation.
"""

from __future__ import annotations

import altair as alt

from simperf.fleet.plan import FleetPlan

_WIDTH = 440
_HEIGHT = 260


def replica_load_chart(timelines: dict, title: str = "Requests in flight per replica") -> alt.Chart:
    """One line per server: requests routed to it and not yet answered, at each time bin's middle."""
    edges = timelines["bin_edges_s"]
    mids = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
    values = [
        {"time_s": t, "server": str(server), "in_flight": load}
        for server, loads in zip(timelines["servers"], timelines["in_flight"], strict=True)
        for t, load in zip(mids, loads, strict=True)
    ]
    return (
        alt.Chart(alt.Data(values=values), title=title)
        .mark_line()
        .encode(
            x=alt.X("time_s:Q", title="time (s)"),
            y=alt.Y("in_flight:Q", title="requests in flight"),
            color=alt.Color("server:N", title="replica"),
            tooltip=["server:N", alt.Tooltip("time_s:Q", format=".0f"), "in_flight:Q"],
        )
        .properties(width=_WIDTH, height=_HEIGHT)
    )


def hit_rate_chart(hit_rates: dict[str, float], title: str = "Prefix-cache hit rate per policy") -> alt.Chart:
    """Share of prompt tokens the replicas' radix caches served, one bar per router policy."""
    values = [{"policy": p, "hit_rate": 100 * r} for p, r in hit_rates.items() if r is not None]
    return (
        alt.Chart(alt.Data(values=values), title=title)
        .mark_bar()
        .encode(
            x=alt.X("policy:N", title="router policy", sort=None),
            y=alt.Y("hit_rate:Q", title="prompt tokens from cache (%)", scale=alt.Scale(domain=[0, 100])),
            tooltip=["policy:N", alt.Tooltip("hit_rate:Q", format=".1f")],
        )
        .properties(width=_WIDTH, height=_HEIGHT)
    )


def attainment_chart(plan: FleetPlan, title: str = "SLA attainment vs replicas") -> alt.LayerChart:
    """Per policy and simulated replica count: the share of requests within every latency bound; filled where the
    fleet's SLA statistics hold."""
    values = [
        {
            "policy": t.policy,
            "replicas": t.replicas,
            "attainment": 100 * t.attainment,
            "meets_sla": t.meets_sla,
        }
        for p in plan.policies
        for t in p.trials
    ]
    base = alt.Chart(alt.Data(values=values), title=title).encode(
        x=alt.X("replicas:Q", title="replicas", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("attainment:Q", title="requests within the SLA (%)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("policy:N", title="router policy"),
    )
    lines = base.mark_line()
    dots = base.mark_point(size=60, filled=True).encode(
        shape=alt.Shape("meets_sla:N", title="fleet meets SLA"),
        tooltip=["policy:N", "replicas:Q", alt.Tooltip("attainment:Q", format=".1f"), "meets_sla:N"],
    )
    return (lines + dots).properties(width=_WIDTH, height=_HEIGHT)
