"""`python -m simperf.calibrate ...` (see simperf.calibrate.cli)."""

import sys

from simperf.calibrate.cli import main
from simperf.calibrate.preflight import CalibrateError
from simperf.errors import UserError

try:
    status = main()
except (CalibrateError, UserError) as exc:
    print(f"error: {exc}", file=sys.stderr)
    status = 2
sys.exit(status)
