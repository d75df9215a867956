"""The one error path at the CLI boundary: every failure a user can cause ends as `error: <where>: <reason>` on
stderr and a non-zero exit, never as a Python traceback.

Commands raise what they raise (a `ScenarioError`, a `FileNotFoundError`, a polars or Arrow error from a file
that is not what it claims to be, a pydantic `ValidationError`, ...) or call `fail(message)`; `SafeGroup`, the
click group class of the `simperf` app, turns each into one line and exit status 2 (`EXIT_BAD_INPUT`). An
exception no rule knows is a bug: it is reported as an internal error with exit status 70 (`EXIT_INTERNAL`,
BSD's EX_SOFTWARE). `simperf --debug ...` (or SIMPERF_DEBUG=1) re-raises instead, so the traceback shows.
"""

from __future__ import annotations

import json
import os
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from simperf.errors import EXIT_BAD_INPUT, UserError

try:  # typer >= 0.24 carries its own copy of click
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover - older typer runs on click itself
    from click import exceptions as _click_errors

UsageError = _click_errors.UsageError
_UsageError = UsageError
# `simperf perfdb` alone: click shows the group's help through this exception (click >= 8.2)
_NoArgsIsHelp: tuple[type[BaseException], ...] = tuple(
    c for c in (getattr(_click_errors, "NoArgsIsHelpError", None),) if c is not None
)

EXIT_INTERNAL = 70
DEBUG_ENV = "SIMPERF_DEBUG"


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print `error: message` and exit with `code`: for command functions (library code raises UserError).
    Works the same whether the command runs under SafeGroup or on its own (a test's typer app)."""
    print_error(message)
    raise typer.Exit(code)


def given_on_command_line(ctx: typer.Context, options: tuple[tuple[str, str], ...]) -> list[str]:
    """The flags of `options` ((flag, parameter name) pairs) the command line gave, whatever their value: an option
    given its default's value is given too."""
    sources = [(flag, ctx.get_parameter_source(name)) for flag, name in options]
    return [flag for flag, source in sources if source is not None and source.name == "COMMANDLINE"]


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or _first_line(str(exc)) or type(exc).__name__
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason


def describe(exc: BaseException) -> tuple[str, int] | None:
    """(message without the `error: ` prefix, exit status) for a failure a user can cause; None for a bug."""
    import pyarrow as pa
    import yaml
    from pydantic import ValidationError

    try:
        from polars.exceptions import PolarsError
    except ImportError:  # `python -m simperf.groundtruth` runs on GPU hosts without polars
        PolarsError = pa.ArrowException  # noqa: N806

    if isinstance(exc, UserError):
        return exc.message, exc.code
    if isinstance(exc, _UsageError):
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        return _first_line(exc.format_message()) + hint, EXIT_BAD_INPUT
    if isinstance(exc, MemoryError):
        return (
            "out of memory: the scenario is larger than this machine can simulate; lower workload.num_prompts "
            "(or see docs/scenario.md, 'Size limits')",
            EXIT_BAD_INPUT,
        )
    if isinstance(exc, OSError):
        return _os_error(exc), EXIT_BAD_INPUT
    if isinstance(exc, ValidationError):
        from simperf.scenario.load import format_validation_error

        return format_validation_error(exc, exc.title), EXIT_BAD_INPUT
    if isinstance(exc, yaml.YAMLError):
        return f"not valid YAML: {_first_line(str(exc))}", EXIT_BAD_INPUT
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", EXIT_BAD_INPUT
    if isinstance(exc, PolarsError | pa.ArrowException):
        return f"cannot read the table ({type(exc).__name__}): {_first_line(str(exc))}", EXIT_BAD_INPUT
    if isinstance(exc, ValueError | KeyError | IndexError | OverflowError):
        # the modules raise ValueError (and subclasses) for input they cannot use, with the field or file named
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        return str(text).strip() or type(exc).__name__, EXIT_BAD_INPUT
    return None


def print_error(message: str, console: Console | None = None) -> None:
    """`error: message` on stderr, unwrapped (a long path stays on one line), markup in it printed as is."""
    console = console or Console(stderr=True)
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def print_note(message: str) -> None:
    """`note: message` on stderr, unwrapped: a legal value the command reads differently from what its user may
    expect, or reads not at all (one line, as an error is)."""
    Console(stderr=True).print(f"note: {escape(message)}", highlight=False, soft_wrap=True)


def debug_requested(ctx: typer.Context | None) -> bool:
    # the usual spellings of "off" are off (SIMPERF_DEBUG=false turned tracebacks on)
    if os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off"):
        return True
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


class SafeGroup(TyperGroup):
    """The `simperf` group: runs the command, and maps what escapes it through `describe`."""

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt, *_NoArgsIsHelp):
            raise
        except Exception as exc:  # noqa: BLE001 - the one place every failure is turned into a message
            if debug_requested(ctx):
                raise
            described = describe(exc)
            if described is None:
                message = (
                    f"internal error ({type(exc).__name__}: {_first_line(str(exc))}); this is a bug in simperf: "
                    f"rerun with `simperf --debug ...` for the traceback and report it"
                )
                code = EXIT_INTERNAL
            else:
                message, code = described
            print_error(message)
            raise typer.Exit(code) from None


# the option the size error names (runsize.check_size), one definition for every command that runs or draws a
# workload: predict, fleet compare|plan, trace export
def _max_memory_gb(value: float | None) -> float | None:
    # NaN is no number of GB: a `min=0` range refused it as "should be greater than or equal to 0"
    if value is not None and not value >= 0:
        raise typer.BadParameter(f"got {value}; give a number of GB >= 0 (0: no limit)")
    return value


MaxMemoryOption = Annotated[
    float | None,
    typer.Option(
        callback=_max_memory_gb,
        help="refuse runs estimated to need more memory (default 8 GB or half the RAM; 0: none)",
    ),
]


def debug_option(
    debug: Annotated[
        bool, typer.Option("--debug", help="on an error, show the Python traceback (also SIMPERF_DEBUG=1)")
    ] = False,
) -> None:
    """Predict SGLang serving performance from measured kernel timings."""
