"""The corpus branch of `simperf accuracy`: progress, output formats, the generated docs block."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from simperf.accuracy.corpus import (
    DOC_BEGIN,
    DOC_END,
    CorpusError,
    markdown,
    report_json,
    run_corpus,
    run_dirs,
)
from simperf.accuracy.run import replace_generated_block
from simperf.progress import bar


def corpus_accuracy(
    corpus: Path, output: str, update_doc: Path | None, err: Console, quiet: bool = False
) -> int:
    from simperf.cli_errors import fail

    try:
        total = len(run_dirs(corpus))
    except CorpusError as e:
        fail(str(e))  # one line: the console wrapped a long message into several
    with bar("predicting runs", total, quiet=quiet) as progress:
        report = run_corpus(corpus, on_run=lambda name: progress.advance(1, status=name))
    if not report.runs:  # a report of empty tables exited 0 (and --update-doc wrote them into the docs)
        name, why = report.skipped[0]
        fail(f"{corpus}: none of its {len(report.skipped)} runs could be predicted; first: {name}: {why}")
    text = markdown(report)
    if update_doc is not None:
        try:
            replace_generated_block(update_doc, text, DOC_BEGIN, DOC_END)
        except (OSError, ValueError) as e:
            fail(str(e))
    sys.stdout.write(report_json(report) + "\n" if output == "json" else text)
    return 0
