"""End-to-end fidelity: predictions of published SGLang runs against what was measured (docs/accuracy.md)."""
