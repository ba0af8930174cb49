"""Panel views of the lab (pn.viewable.Viewer subclasses); the state they show lives in app.model."""
