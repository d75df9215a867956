"""Run one of groundtruth/'s /proc samplers beside a spinning process for a while: the setup the tests of
cpu_sampler.py and thread_sampler.py share."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

GROUNDTRUTH = Path(__file__).resolve().parent.parent / "groundtruth"
SPIN = "import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass"


def sample_beside(
    tmp_path: Path, sampler: str, interval_ms: int, process: list[str], seconds: float
) -> tuple[Path, int]:
    """Start `process`, run groundtruth/`sampler` on its pid for `seconds`, stop both; the sampler's CSV and the pid."""
    target = subprocess.Popen(process)
    out, stop = tmp_path / f"{Path(sampler).stem}.csv", tmp_path / "stop"
    running = subprocess.Popen(
        [sys.executable, str(GROUNDTRUTH / sampler), str(out), str(interval_ms), str(stop), str(target.pid)]
    )
    time.sleep(seconds)
    stop.touch()
    running.wait(timeout=10)
    target.wait(timeout=10)
    return out, target.pid
