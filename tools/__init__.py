"""The course's build tools: executing, cataloguing and publishing the notebooks (installed with the project, so
``from tools.catalog import ...`` works from scripts, tests and the site configuration alike)."""
