"""The recipe engine: (H, D, Q) -> validation, Gamma, the Eq. (9) step, LaTeX, the stationarity residual."""
