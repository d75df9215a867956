"""`python -m simperf.calibrate ...` (see simperf.calibrate.cli)."""

import sys

from simperf.calibrate.cli import main

sys.exit(main())
