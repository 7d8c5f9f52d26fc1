__version__ = "0.1.0"

import os as _os

# where the bench package lies, whatever module asks (code moves between subpackages): the
# sandboxed workers put SOURCE_ROOT on PYTHONPATH, and the in-process guards trust code under
# PACKAGE_DIR as the evaluator's own
PACKAGE_DIR = _os.path.dirname(_os.path.abspath(__file__))
SOURCE_ROOT = _os.path.dirname(PACKAGE_DIR)
