"""One-shot capacity planning: candidate layouts from SGLang's rules, simulated and ranked; launch commands."""
