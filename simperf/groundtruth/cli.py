"""`simperf groundtruth ...`: record real SGLang runs on a GPU host (run), and manage the corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from simperf.cli_errors import SafeGroup
from simperf.strictyaml import read_error

groundtruth_app = typer.Typer(
    cls=SafeGroup,  # `python -m simperf.groundtruth` too: a bad file ends as one error line, not a traceback
    no_args_is_help=True,
    help="Record real SGLang runs (server + bench_serving) as ground truth, on a GPU host with SGLang installed.",
)
err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    from simperf.cli_errors import fail

    fail(message, code)  # simperf's one error line: unwrapped, markup in paths printed as is


@groundtruth_app.command("run")
def run_command(
    plan: Annotated[Path, typer.Argument(help="plan YAML (servers, their flags, bench_serving runs)")],
    out: Annotated[Path, typer.Option(help="corpus directory (small files, committed)")] = Path(
        "groundtruth"
    ),
    work: Annotated[Path, typer.Option(help="host scratch: model dirs, raw logs and outputs")] = Path(
        "/tmp/simperf-groundtruth"
    ),
    deadline: Annotated[
        float | None,
        typer.Option(help="seconds after which no new run starts (the rest waits for the next call)"),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option(help="server or server/run names to do (repeatable)")
    ] = None,
    port: Annotated[int, typer.Option(help="server port")] = 30000,
    stop_after: Annotated[
        bool, typer.Option(help="stop the server at the end (default: leave it for reuse)")
    ] = False,
    retry_failed: Annotated[bool, typer.Option(help="run again the runs recorded as failed")] = False,
    server_module: Annotated[
        str, typer.Option(hidden=True, help="module run as the server (tests use a CPU stand-in)")
    ] = "sglang.launch_server",
) -> None:
    """Run a ground-truth plan: start each server (dummy weights), drive its bench_serving runs, collect them."""
    from simperf.groundtruth.plan import PlanError, load_plan
    from simperf.groundtruth.runner import GroundTruthError, RunnerOptions, run_plan

    try:
        spec = load_plan(plan)
    except PlanError as e:
        _fail(str(e))
    _check_models(spec)
    if deadline is not None and not deadline > 0:  # nan passed `<= 0`, and every later comparison with it
        _fail(f"--deadline: got {deadline}; give a positive number of seconds")
    # the server could not bind a port outside TCP's range, or (0) bound a random one bench_serving never found
    if not 1 <= port <= 65535:
        _fail(f"--port: got {port}; give a TCP port, 1 to 65535")
    names = {s.name for s in spec.servers} | {f"{s.name}/{r.name}" for s in spec.servers for r in s.runs}
    unknown = [o for o in only or [] if o not in names]
    if unknown:
        _fail(
            f"--only: {', '.join(unknown)} not in the plan; known servers: {', '.join(s.name for s in spec.servers)}"
        )
    opts = RunnerOptions(
        out=out,
        work=work,
        deadline_s=deadline,
        only=tuple(only or ()),
        port=port,
        stop_after=stop_after,
        retry_failed=retry_failed,
        server_module=server_module,
    )
    try:
        counts = run_plan(spec, plan, opts)
    except GroundTruthError as e:
        _fail(str(e))
    err.print(f"groundtruth: {json.dumps(counts)}; corpus in {out}", highlight=False)
    if counts["failed"]:
        raise typer.Exit(1)


def _check_models(plan) -> None:
    """Every server's model and draft model resolve before anything starts: a misspelt draft failed after the
    target's server directory was written, with a traceback."""
    from simperf.groundtruth import modeldir

    for i, server in enumerate(plan.servers):
        for field, model in (("model", server.model), ("draft_model", server.draft_model)):
            if model is None:
                continue
            try:
                modeldir.source_config(model)
            except modeldir.ModelDirError as e:
                _fail(f"servers[{i}].{field}: {e}")


@groundtruth_app.command("index")
def index_command(
    corpus: Annotated[Path, typer.Argument(help="corpus directory")] = Path("groundtruth"),
) -> None:
    """Rebuild the corpus index (index.parquet) from the run directories."""
    from simperf.groundtruth.index import run_dirs, write_index

    if not corpus.is_dir():
        _fail(f"{corpus}: not a directory")
    if not run_dirs(corpus):  # a 0-run index.parquet was written (over any earlier one) for a mistyped corpus
        _fail(f"{corpus}: no runs (no <gpu>/<server>/<run>/run.json below it); nothing indexed")
    path = write_index(corpus)
    err.print(f"{len(run_dirs(corpus))} runs indexed in {path}", highlight=False)


@groundtruth_app.command("modeldir")
def modeldir_command(
    model: Annotated[str, typer.Argument(help="zoo name, or a directory/config.json of a HF model")],
    directory: Annotated[Path, typer.Argument(help="where to write config.json and the tokenizer")],
    prompts: Annotated[
        Path | None,
        typer.Option(help="also write the ShareGPT-format prompt source bench_serving samples from"),
    ] = None,
) -> None:
    """Write a model directory SGLang serves with --load-format dummy (what the runner does before a start)."""
    from simperf.groundtruth import modeldir

    if (
        prompts is not None and prompts.is_dir()
    ):  # an existing file is kept as the source; a directory was too
        _fail(f"--prompts {prompts}: is a directory; give the prompt file's name")
    if directory.exists() and not directory.is_dir():
        _fail(f"{directory}: exists and is not a directory; give the model directory to write")
    _check_prompts_path(prompts, directory)
    own = (
        {prompts.name} if prompts is not None and prompts.absolute().parent == directory.absolute() else set()
    )
    foreign = [name for name in modeldir.foreign_files(directory) if name not in own]
    if foreign:  # config.json and tokenizer.json were replaced in place, beside files of something else
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        _fail(
            f"{directory}: holds other files ({shown}); its config.json and tokenizer would be replaced: "
            "give a new or empty directory (or one modeldir wrote)"
        )
    try:
        config = modeldir.source_config(model)
        modeldir.write_model_dir(config, directory)
        if prompts is not None:
            modeldir.write_prompt_source(prompts, int(config["vocab_size"]))
    except modeldir.ModelDirError as e:
        _fail(str(e))
    err.print(f"model directory written to {directory}", highlight=False)


def _check_prompts_path(prompts: Path | None, directory: Path) -> None:
    """An existing --prompts file is kept as the prompt source: a scenario, or the directory's own config.json
    (written first, then kept), was accepted as bench_serving's prompts without a word."""
    from simperf.groundtruth import modeldir

    if prompts is None:
        return
    inside = prompts.absolute().parent == directory.absolute()
    if inside and prompts.name in modeldir.MODEL_DIR_FILES:
        _fail(
            f"--prompts {prompts}: is the model directory's own {prompts.name}; give the prompt file another name"
        )
    if prompts.is_file() and not modeldir.is_prompt_source(prompts):
        _fail(
            f"--prompts {prompts}: exists and is not a ShareGPT prompt file (a JSON list of "
            "{conversations: [...]}), which would be kept as the prompt source; give a new file name"
        )


@groundtruth_app.command("overheads")
def overheads_command(
    corpus: Annotated[Path, typer.Argument(help="corpus directory")] = Path("groundtruth"),
    update_doc: Annotated[
        Path | None,
        typer.Option(help="also rewrite the generated block of this markdown file (docs/overheads.md)"),
    ] = None,
) -> None:
    """Where each run's TTFT goes (client, API server, scheduler, prefill, output path), from its timestamps."""
    from simperf.groundtruth.decompose import corpus_stages, markdown

    if not corpus.is_dir():
        _fail(f"{corpus}: not a directory")
    stages = corpus_stages(corpus)
    if not stages:
        _fail(f"{corpus}: no run with server timestamps")
    text = markdown(stages)
    from simperf.accuracy.hostcosts import hosts_markdown

    hosts = hosts_markdown(corpus)
    if update_doc is not None:
        _update_overheads_doc(update_doc, text, hosts)
    print(text + ("\n" + hosts if hosts else ""), end="")


def _update_overheads_doc(path: Path, text: str, hosts: str) -> None:
    """Both generated blocks checked before either is written: a page without the hosts block had its overheads
    block rewritten, and then the command failed on the hosts block, the page half updated."""
    from simperf.accuracy.run import check_generated_block, replace_generated_block

    blocks = [(text, OVERHEADS_BEGIN, OVERHEADS_END)] + ([(hosts, HOSTS_BEGIN, HOSTS_END)] if hosts else [])
    try:
        for _, begin, end in blocks:
            check_generated_block(path, begin, end)
        for body, begin, end in blocks:
            replace_generated_block(path, body, begin, end)
    except (OSError, ValueError) as e:
        _fail(str(e))


OVERHEADS_BEGIN = "<!-- simperf groundtruth overheads: begin (generated; do not edit by hand) -->"
OVERHEADS_END = "<!-- simperf groundtruth overheads: end -->"
HOSTS_BEGIN = "<!-- simperf groundtruth overheads, hosts: begin (generated; do not edit by hand) -->"
HOSTS_END = "<!-- simperf groundtruth overheads, hosts: end -->"


@groundtruth_app.command("trace")
def trace_command(
    traces: Annotated[list[Path], typer.Argument(help="torch profiler chrome traces (.json or .json.gz)")],
    top: Annotated[
        int | None,
        typer.Option(min=0, help="kernel groups listed per trace (default 25; not with --decode-replays)"),
    ] = None,
    decode_replays: Annotated[
        bool,
        typer.Option(
            "--decode-replays",
            help="a served decode (SGLang's /start_profile, groundtruth/profile_served.sh): each iteration split "
            "into its CUDA-graph replay and the GPU work between replays (medians), instead of the summary",
        ),
    ] = False,
) -> None:
    """GPU busy time, kernels, launches and host issue time of profiled forwards, one JSON object per line."""
    from dataclasses import asdict

    from simperf.groundtruth.trace import decode_replays as split_replays
    from simperf.groundtruth.trace import read_trace, summarize

    # the replay split lists no kernel groups: --top was read by nothing
    if decode_replays and top is not None:
        _fail("--top: lists the summary's kernel groups; --decode-replays prints no such list")
    for path in traces:
        try:
            events = read_trace(path)
            row = (
                asdict(split_replays(events))
                if decode_replays
                else summarize(events, top=25 if top is None else top).as_dict()
            )
        except OSError as e:  # "[Errno 2] No such file or directory: 'x.json'" named the path twice
            _fail(f"{path}: {read_error(e)}")
        except (ValueError, KeyError) as e:
            _fail(f"{path}: {e}")
        print(json.dumps({"trace": path.name, **row}))
