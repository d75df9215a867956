# models.py attaches the fleet section (fleet.py, which builds on models.py) when it loads: importing models first
# keeps that order whichever of the two a caller imports
from simperf.scenario import models as _models  # noqa: F401
