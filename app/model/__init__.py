"""The lab's state and logic, with no Panel or Bokeh in it: everything a browser-free test needs.

`config.LabConfig` is what a link reproduces; `lab.Lab` turns it into live runs and says, as
structured values (`reasons`), why a run cannot start or why it stopped; `live_run` holds one
ensemble and its aggregates; `urlstate` maps a configuration to a URL query and back;
`presets` lists what the lab offers (read from the library); `exports` writes the samples;
`content` lists the lesson pages and the generated figures.
"""
