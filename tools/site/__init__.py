"""The Sphinx site of the course: its configuration (conf.py) and its extension (posenc_site)."""
