"""Where the bundle's files and the controller's state live.

Results and controller state default to folders in the checkout; the
environment variables STATION_RESULTS_DIR and STATION_STATE_DIR move them
(the test suite points both at a temporary folder, so it never touches a
user's measurements, secrets or logs).
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "recipes"
ANSIBLE = ROOT / "ansible"
DOCKER = ROOT / "docker"
RESULTS = Path(os.environ.get("STATION_RESULTS_DIR") or ROOT / "results").resolve()
# Controller-only state: secrets (0700/0600), rendered vars, logs, caches.
STATE = Path(os.environ.get("STATION_STATE_DIR") or ROOT / ".station").resolve()
SECRETS = STATE / "secrets"
CACHE = STATE / "cache"
LOGS = STATE / "logs"


def private_dir(path: Path) -> Path:
    """A folder only its owner can read (secrets)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def write_whole(path: Path, text: str) -> Path:
    """`text` into `path` through a temporary file beside it: a reader never sees it half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(text)
    partial.replace(path)
    return path
