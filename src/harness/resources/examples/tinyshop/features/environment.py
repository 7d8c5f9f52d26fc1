"""behave hooks for the tinyshop suite.

Only hooks live here; step definitions are in features/steps/.
"""

import shutil
import tempfile
from pathlib import Path

FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"


def before_all(context):
    # @wip and @live scenarios are not meant for CI; run the suite with
    # --tags='not @wip' --tags='not @live'.
    context.fixtures_dir = FIXTURES_DIR


def before_scenario(context, scenario):
    # Every scenario gets its own scratch directory for generated files
    # (inline configurations and the like) so scenarios never share state.
    context.scratch_dir = Path(tempfile.mkdtemp(prefix="tinyshop-"))
    context.error = None


def after_scenario(context, scenario):
    shutil.rmtree(context.scratch_dir, ignore_errors=True)
