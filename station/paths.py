"""Where the bundle's files and the controller's state live."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "recipes"
ANSIBLE = ROOT / "ansible"
DOCKER = ROOT / "docker"
RESULTS = ROOT / "results"
# Controller-only state: secrets (0700/0600), rendered vars, logs, caches.
STATE = ROOT / ".station"
SECRETS = STATE / "secrets"
CACHE = STATE / "cache"
LOGS = STATE / "logs"


def private_dir(path: Path) -> Path:
    """A folder only its owner can read (secrets)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path
