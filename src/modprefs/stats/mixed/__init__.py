"""The mixed-model engine: REML for crossed random intercepts, formula-driven LMMs and their profiled criterion."""
