"""The plan as an artifact: the model, its file format, diffs and the summary."""
