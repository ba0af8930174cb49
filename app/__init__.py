"""The Panel web app of the SG-MCMC lab (`panel serve app`).

`main.py` is the Bokeh directory-app entry point. `app.model` holds the state and logic and
imports no Panel or Bokeh (testable without a browser); `app.views` shows it with Panel and Bokeh.
"""
