"""The peers' virtualenv: created on first use, beside nothing of the project's.

DBOS, LangGraph and Temporal are benchmark peers, not dependencies: they are installed from
`requirements.txt` into their own virtualenv (default `~/.cache/switchyard-bench/peers-venv`,
or `$SWITCHYARD_PEERS_VENV`), never into the project's. Their modules run with its interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
VENV_ENV = "SWITCHYARD_PEERS_VENV"
MODULES = {
    "dbos": HERE / "dbos_peer.py",
    "langgraph": HERE / "langgraph_peer.py",
    "temporal": HERE / "temporal_peer.py",
}


def default_venv() -> Path:
    configured = os.environ.get(VENV_ENV)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "switchyard-bench" / "peers-venv"


def ensure_venv(venv: Path) -> Path:
    """The venv's interpreter, after creating the venv and installing the pinned peers."""
    python = venv / "bin" / "python"
    stamp = venv / ".requirements"
    wanted = REQUIREMENTS.read_text()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    base = getattr(sys, "_base_executable", sys.executable)  # the project's Python, not its venv
    if not python.exists():
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)], check=True
    )
    stamp.write_text(wanted)
    return python
