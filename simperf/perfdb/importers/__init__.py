"""Third-party kernel tables turned into simperf calibration tables (docs/calibration.md, "Third-party tables")."""
