"""Command-line interface (Typer). Command families live in ``cmd_*.py`` modules."""
