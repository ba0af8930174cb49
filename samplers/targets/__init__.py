"""Targets p(theta) ~ exp(-U(theta)): the Potential, the presets, data posteriors, simplex targets, typed U."""
