"""Panel views of the lab (pn.viewable.Viewer subclasses); the state they show lives in app.model.

`page` is the whole page (header, sections, the URL); `lab` the lab section, with `controls`,
`recipe_editor`, `plots` and the `frame_loop` that animates it; `lessons` (with `lesson_demo`)
and `figures` the other two sections.
"""
