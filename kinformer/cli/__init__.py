"""The ``kinformer`` command (a side wing: the library never imports it)."""

from kinformer.cli.main import main

__all__ = ["main"]
