"""The Panel web app of the SG-MCMC lab (`panel serve app`).

`main.py` is the Bokeh directory-app entry point; everything else is importable as the
`app` package (state and logic in model.py and live_run.py need no Panel at all).
"""
