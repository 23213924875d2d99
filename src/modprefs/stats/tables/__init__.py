"""The paper's analyses (one module per table or figure family), their catalogue of outputs and the runner."""
