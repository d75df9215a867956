import sys
from pathlib import Path

# test helpers (tests/simfakes.py) import as plain modules
sys.path.insert(0, str(Path(__file__).parent))

from hypothesis import Phase, settings  # noqa: E402

# benchmarks/mutations.py: only whether a test fails matters there, not the smallest failing example
settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate], deadline=None)
