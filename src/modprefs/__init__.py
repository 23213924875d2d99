"""modprefs: a cross-modal (text vs audio) preference study for speech alignment.

The library behind the Snakemake workflow. Each stage is a subpackage with pure functions;
file I/O lives in ``modprefs.io`` and in the workflow's thin scripts.
"""

__version__ = "0.1.0"
