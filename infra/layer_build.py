"""The library layer: `switchyard` and its runtime dependencies, built for Lambda without Docker.

pip installs wheels for the Lambda platform (Python 3.13 on ARM64, Amazon Linux 2023, glibc 2.34)
from the pinned, hashed `infra/layer/requirements.lock`, then the library's sources are copied
beside them. The result is cached under `~/.cache/switchyard/layers/<hash>`, keyed by the lock file,
the platform and every library source file, so a synth that changes nothing rebuilds nothing and
two machines build the same bytes.

Lambda's `/opt` is read-only, so a layer without byte-code compiles every module it imports on
every cold start. The build compiles the layer with `compileall --invalidation-mode
unchecked-hash`: each `.pyc` holds its source's hash, not a timestamp, and is never checked
against the source (nothing changes in a layer), and the file names it records are under
`/opt/python`, so the bytes are the same on every machine. Byte-code is only valid for the
interpreter that wrote it: the build compiles with a CPython of the runtime's version
(`SWITCHYARD_LAYER_PYTHON`, else `python3.13` on the PATH, else pyenv's 3.13); without one it says
so on standard error and ships sources only (docs/deploy.md, "Cold starts").

    python -m infra.layer_build lock     # re-resolve requirements.in into requirements.lock
    python -m infra.layer_build build    # build (or reuse) the layer, print its folder

CDK calls `build` through `LocalLayerBundling` (an `ILocalBundling`); Docker is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsii
from aws_cdk import BundlingOptions, ILocalBundling

PYTHON_VERSION = "3.13"
"""The functions' Lambda runtime: 3.13 rather than the newer 3.14 so that the layer built on the
project's machines, which have a CPython 3.13 and no 3.14, ships byte-code (docs/deploy.md,
"Cold starts")."""
ARCHITECTURE = "aarch64"
GLIBC_MINORS = range(17, 35)
"""Lambda's Amazon Linux 2023 has glibc 2.34: wheels tagged manylinux_2_17 ... manylinux_2_34 run
on it. pip does not widen an explicit `--platform`, so each tag is named: with
`manylinux2014_aarch64` alone pip silently falls back to old releases (jsonschema-rs, psycopg-binary
publish their ARM64 wheels as manylinux_2_28)."""
LAYER_DIR = Path(__file__).parent / "layer"
REQUIREMENTS_IN = LAYER_DIR / "requirements.in"
REQUIREMENTS_LOCK = LAYER_DIR / "requirements.lock"
LAYER_PYTHON_ENV = "SWITCHYARD_LAYER_PYTHON"
"""A Python of the runtime's version to compile the layer's byte-code with."""
LAMBDA_LAYER_PATH = "/opt/python"
"""Where Lambda mounts a layer's `python/` folder: the file names the byte-code records."""
_SKIPPED_PARTS = {"__pycache__"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}


def platform_args() -> list[str]:
    tags = ["manylinux2014_" + ARCHITECTURE]
    tags += [f"manylinux_2_{minor}_{ARCHITECTURE}" for minor in GLIBC_MINORS]
    args: list[str] = []
    for tag in tags:
        args += ["--platform", tag]
    return [
        *args,
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
    ]


def requirements(path: Path = REQUIREMENTS_IN) -> list[str]:
    """The requirement lines of a requirements file (comments and blanks dropped)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def library_files(root: Path) -> list[Path]:
    """Every file of the `switchyard` package, sorted, without byte-code."""
    package = root / "layers" / "switchyard"
    return sorted(
        path
        for path in package.rglob("*")
        if path.is_file()
        and not _SKIPPED_PARTS.intersection(path.parts)
        and path.suffix not in _SKIPPED_SUFFIXES
    )


def _cache_tag(python: str) -> str | None:
    """The interpreter's byte-code tag (`cpython-313`), or None when it does not run (a pyenv
    shim for a version that is installed but not selected exits 127)."""
    try:
        probe = subprocess.run(
            [python, "-c", "import sys; print(sys.implementation.cache_tag)"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    tag = probe.stdout.strip()
    return tag if probe.returncode == 0 and tag else None


def _pyenv_pythons() -> list[str]:
    """pyenv's installed CPythons of the runtime's version, newest patch release first: its shim
    runs a version only where `pyenv global`/`local` selects it, the interpreter always."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = root.glob(f"versions/{PYTHON_VERSION}.*/bin/python{PYTHON_VERSION}")

    def patch(path: Path) -> tuple[int, str]:
        release = path.parent.parent.name.removeprefix(f"{PYTHON_VERSION}.")
        return (int(release), "") if release.isdigit() else (-1, release)

    return [str(path) for path in sorted(found, key=patch, reverse=True)]


def bytecode_python() -> str | None:
    """A CPython of the runtime's version: `SWITCHYARD_LAYER_PYTHON` (which must be one), else
    the first that runs of `python3.13` on the PATH and pyenv's 3.13 installs; or None."""
    expected = "cpython-" + PYTHON_VERSION.replace(".", "")
    explicit = os.environ.get(LAYER_PYTHON_ENV)
    if explicit:
        tag = _cache_tag(explicit)
        if tag != expected:
            raise RuntimeError(
                f"{LAYER_PYTHON_ENV}={explicit} is {tag or '(did not run)'}; the layer's "
                f"byte-code must be compiled by Python {PYTHON_VERSION} ({expected}), the "
                "functions' runtime"
            )
        return explicit
    on_path = shutil.which(f"python{PYTHON_VERSION}")
    for candidate in [*([on_path] if on_path else []), *_pyenv_pythons()]:
        if _cache_tag(candidate) == expected:
            return candidate
    return None


def compile_bytecode(target: Path, python: str) -> None:
    """Compile every module under `target` as Lambda will find it: `unchecked-hash` byte-code
    (reproducible, never re-validated) whose recorded paths are under `/opt/python`."""
    subprocess.run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            "unchecked-hash",
            "-s",
            str(target),
            "-p",
            LAMBDA_LAYER_PATH,
            str(target),
        ],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": "0", "PYTHONHASHSEED": "0"},
    )


def layer_hash(root: Path, lock: Path = REQUIREMENTS_LOCK, *, bytecode: bool | None = None) -> str:
    """Content hash of what goes into the layer: lock file, platform, library sources, and
    whether it holds byte-code."""
    if bytecode is None:
        bytecode = bytecode_python() is not None
    digest = hashlib.sha256()
    digest.update(json.dumps(platform_args()).encode())
    digest.update(b"bytecode" if bytecode else b"sources")
    digest.update(lock.read_bytes())
    package = root / "layers"
    for path in library_files(root):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "switchyard" / "layers"


def _pip(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args],
        check=True,
    )


def lock(path: Path = REQUIREMENTS_LOCK) -> None:
    """Resolve requirements.in for the Lambda platform into exact versions with hashes."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        _pip(
            "install",
            "--dry-run",
            "--ignore-installed",
            "--target",
            str(Path(tmp) / "target"),
            "--report",
            str(report),
            *platform_args(),
            *requirements(),
        )
        installed = json.loads(report.read_text())["install"]
    lines = [
        "# Generated by `python -m infra.layer_build lock` from requirements.in; do not edit.",
        f"# Platform: CPython {PYTHON_VERSION}, manylinux {ARCHITECTURE} (glibc <= 2.34).",
    ]
    for item in sorted(installed, key=lambda i: i["metadata"]["name"].lower()):
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        archive = item["download_info"].get("archive_info", {})
        sha = archive.get("hashes", {}).get("sha256") or archive.get("hash", "").partition("=")[2]
        lines.append(f"{name}=={version} --hash=sha256:{sha}")
    path.write_text("\n".join(lines) + "\n")


def _copy_library(root: Path, target: Path) -> None:
    package = root / "layers"
    for path in library_files(root):
        destination = target / path.relative_to(package)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)


def build(root: Path, *, cache: Path | None = None) -> Path:
    """The layer's folder (with `python/` inside), built once per layer hash."""
    python = bytecode_python()
    folder = (cache or cache_root()) / layer_hash(root, bytecode=python is not None)
    if (folder / "python").is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="layer-", dir=folder.parent))
    try:
        target = staging / "python"
        _pip(
            "install",
            "--no-deps",
            "--require-hashes",
            "--no-compile",
            "--target",
            str(target),
            *platform_args(),
            "-r",
            str(REQUIREMENTS_LOCK),
        )
        # Console scripts carry this machine's interpreter path; nothing on Lambda runs them.
        shutil.rmtree(target / "bin", ignore_errors=True)
        _copy_library(root, target)
        if python is not None:
            compile_bytecode(target, python)
        else:
            print(
                f"switchyard layer: no Python {PYTHON_VERSION} to compile byte-code with (set "
                f"{LAYER_PYTHON_ENV}); the layer ships sources, which every cold start compiles",
                file=sys.stderr,
            )
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if not (folder / "python").is_dir():
            raise
    return folder


@jsii.implements(ILocalBundling)
class LocalLayerBundling:
    """CDK local bundling: copy the cached layer into the asset's output folder."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        shutil.copytree(build(self._root) / "python", Path(output_dir) / "python")
        return True


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "build"
    if command == "lock":
        lock()
        print(REQUIREMENTS_LOCK)
    elif command == "build":
        print(build(Path(__file__).resolve().parent.parent))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
