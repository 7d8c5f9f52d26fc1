"""Files req2test ships inside its package: prompt templates and paragraphs, sandbox policies,
and the bundled examples (``req2test demo`` builds ``examples/tinyshop``).

They live here, not beside ``src/``, so a wheel carries them; the repository's top-level
``prompts/``, ``sandboxes/`` and ``examples/{tinyshop,demo,custom_agent}`` are links to them.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource_dir(*parts: str) -> Path:
    """A shipped directory on disk (wheels install unzipped, so the resource is a real path)."""
    return Path(str(files(__name__).joinpath(*parts)))
