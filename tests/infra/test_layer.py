"""The library layer: what goes in, its cache key, and a real build for Lambda's platform."""

from __future__ import annotations

import ast
import re
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra import layer_build
from tests.infra.synth import REPO

NOT_IN_LAYER = {"pgserver", "jsonpath-ng", "orjson", "uvicorn", "croniter", "ruamel.yaml"}
"""Runtime dependencies that only the local engine and CLI use (the handler-import test below
checks that no function reaches them)."""


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_layer_requirements_are_pyprojects_without_the_local_only_ones() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = {_name(r) for r in pyproject["project"]["dependencies"]}
    layer = {_name(r) for r in layer_build.requirements()}
    assert layer == declared - NOT_IN_LAYER


def test_the_lock_pins_every_requirement_with_a_hash() -> None:
    locked = {}
    for line in layer_build.requirements(layer_build.REQUIREMENTS_LOCK):
        name, _, rest = line.partition("==")
        assert re.fullmatch(r"\S+ --hash=sha256:[0-9a-f]{64}", rest), line
        locked[name.lower().replace("_", "-")] = rest
    for requirement in layer_build.requirements():
        assert _name(requirement) in locked
    assert not NOT_IN_LAYER & set(locked)


def test_the_platform_is_python_313_on_arm64_up_to_glibc_234() -> None:
    args = layer_build.platform_args()
    assert args[args.index("--python-version") + 1] == "3.13"
    platforms = [args[i + 1] for i, a in enumerate(args) if a == "--platform"]
    assert "manylinux2014_aarch64" in platforms
    assert "manylinux_2_28_aarch64" in platforms  # jsonschema-rs, psycopg-binary
    assert "manylinux_2_34_aarch64" in platforms
    assert not any("2_35" in p or "x86_64" in p for p in platforms)


def _library_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(
        REPO / "layers", root / "layers", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    return root


def test_the_cache_key_follows_the_library_sources_and_ignores_bytecode(tmp_path: Path) -> None:
    root = _library_copy(tmp_path)
    key = layer_build.layer_hash(root)
    assert layer_build.layer_hash(root) == key
    (root / "layers" / "switchyard" / "__pycache__").mkdir(exist_ok=True)
    (root / "layers" / "switchyard" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert layer_build.layer_hash(root) == key
    constants = root / "layers" / "switchyard" / "constants.py"
    constants.write_text(constants.read_text() + "\n# changed\n")
    assert layer_build.layer_hash(root) != key


PYTHON_313_MAGIC = (3571).to_bytes(2, "little") + b"\r\n"
"""CPython 3.13's byte-code magic number (`Lib/importlib/_bootstrap_external.py`), the same in
every 3.13.x release."""


@pytest.mark.slow
def test_a_real_build_has_arm64_wheels_the_library_and_nothing_local_only(
    tmp_path: Path,
) -> None:
    """Downloads wheels from PyPI (pip's cache makes a second run fast). Where the build finds a
    Python 3.13 (this project's machines: pyenv's), every module has its 3.13 byte-code."""
    root = _library_copy(tmp_path)
    cache = tmp_path / "cache"
    folder = layer_build.build(root, cache=cache)
    python = folder / "python"
    assert (python / "switchyard" / "constants.py").is_file()
    assert (python / "switchyard" / "triggers" / "webhook.py").is_file()
    assert list(python.glob("pydantic_core/_pydantic_core.cpython-313-aarch64-linux-gnu.so"))
    assert list(python.glob("psycopg_binary/*.cpython-313-aarch64-linux-gnu.so"))
    assert (python / "aws_xray_sdk").is_dir()
    assert not (python / "pgserver").exists()
    assert not (python / "jsonpath_ng").exists()
    assert not (python / "bin").exists()
    sources = sorted(python.rglob("*.py"))
    compiled = sorted(python.rglob("*.pyc"))
    if layer_build.bytecode_python() is None:
        assert compiled == []
    else:
        assert len(compiled) == len(sources) > 1000
        for source in sources:
            pyc = source.parent / "__pycache__" / f"{source.stem}.cpython-313.pyc"
            header = pyc.read_bytes()[:8]
            assert header[:4] == PYTHON_313_MAGIC, pyc
            assert int.from_bytes(header[4:8], "little") == 0b01, pyc  # unchecked hash
    size = sum(p.stat().st_size for p in python.rglob("*") if p.is_file())
    assert size < 200 * 1024 * 1024  # Lambda: 250 MB unzipped for function and layers
    assert layer_build.build(root, cache=cache) == folder  # cached by content


def test_the_functions_runtime_is_the_layers_python() -> None:
    from infra.constructs.functions import RUNTIME

    assert RUNTIME.name == f"python{layer_build.PYTHON_VERSION}"


LAYER_MODULES = {
    # import name -> the requirement in requirements.in that provides it
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
    "yaml": "pyyaml",
    "jinja2": "jinja2",
    "jsonschema_rs": "jsonschema-rs",
    "anthropic": "anthropic",
    "boto3": "boto3",
    "botocore": "boto3",
    "aws_lambda_powertools": "aws-lambda-powertools",
    "aws_xray_sdk": "aws-lambda-powertools",
    "httpx": "httpx",
    "psycopg": "psycopg",
    "psycopg_pool": "psycopg",
    "fastapi": "fastapi",
    "starlette": "fastapi",  # FastAPI's own dependency, pinned in the lock
    "mangum": "mangum",
}


def _optional(tree: ast.AST) -> set[int]:
    """The imports in the body of a `try` whose handler catches `ImportError` (or
    `ModuleNotFoundError`): optional, the module does without them."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = {
            name.id
            for handler in node.handlers
            for name in ast.walk(handler.type)
            if handler.type is not None
            if isinstance(name, ast.Name)
        }
        if caught & {"ImportError", "ModuleNotFoundError"}:
            found |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return found


def _imports(path: Path) -> set[str]:
    """The modules a file imports when it runs: not those under `if TYPE_CHECKING:`."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    optional = _optional(tree)
    for node in _runtime_nodes(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and ast.unparse(child.test) in _TYPE_CHECKING:
            yield from (n for orelse in child.orelse for n in (orelse, *_runtime_nodes(orelse)))
            continue
        yield child
        yield from _runtime_nodes(child)


_TYPE_CHECKING = {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def _module_files(name: str) -> list[Path]:
    """The files importing `name` runs: each package's `__init__.py` on the way, then its own."""
    parts = name.split(".")
    found = []
    for end in range(1, len(parts) + 1):
        path = REPO / "layers" / Path(*parts[:end])
        for candidate in (path / "__init__.py", path.with_suffix(".py")):
            if candidate.is_file():
                found.append(candidate)
                break
    return found


def test_everything_the_handlers_import_is_in_the_layer() -> None:
    """Follow the imports of every functions/*/handler.py through the library (with the
    packages' `__init__` modules, as Python runs them): each third-party module reached must come
    from the layer (and pgserver or jsonpath_ng must not be reached)."""
    seen: set[Path] = set()
    todo = sorted(REPO.glob("functions/*/handler.py"))
    third_party: dict[str, Path] = {}
    while todo:
        path = todo.pop()
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "switchyard":
                for found in _module_files(name):
                    if found not in seen:
                        seen.add(found)
                        todo.append(found)
            elif top not in sys.stdlib_module_names:
                third_party.setdefault(top, path)
    missing = {
        m: str(p.relative_to(REPO)) for m, p in third_party.items() if m not in LAYER_MODULES
    }
    assert missing == {}
    layer = {_name(r) for r in layer_build.requirements()}
    assert {LAYER_MODULES[m] for m in third_party} <= layer


def test_the_layers_bytecode_is_reproducible_unchecked_and_names_opt_python(
    tmp_path: Path,
) -> None:
    """Compiled twice, in two folders: the same bytes; hash-based and never checked against
    the source (flags 0b01); the code objects name the file where Lambda mounts it."""
    import marshal

    compiled = []
    for copy in ("a", "b"):
        target = tmp_path / copy / "python"
        (target / "pkg").mkdir(parents=True)
        (target / "pkg" / "__init__.py").write_text("def f():\n    return 1\n")
        layer_build.compile_bytecode(target, sys.executable)
        (pyc,) = (target / "pkg" / "__pycache__").glob("__init__.*.pyc")
        compiled.append(pyc.read_bytes())
    assert compiled[0] == compiled[1]
    assert int.from_bytes(compiled[0][4:8], "little") == 0b01  # hash-based, unchecked
    code = marshal.loads(compiled[0][16:])
    assert code.co_filename == "/opt/python/pkg/__init__.py"


def test_a_bytecode_python_of_another_version_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(layer_build.LAYER_PYTHON_ENV, sys.executable)
    with pytest.raises(RuntimeError, match=r"must be compiled by Python 3\.13 \(cpython-313\)"):
        layer_build.bytecode_python()


def _this_python_as_the_runtimes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Make the running interpreter's version the runtime's, with an empty PATH and pyenv root:
    the discovery tests below then run real interpreters, whatever is installed here."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    monkeypatch.setattr(layer_build, "PYTHON_VERSION", version)
    monkeypatch.delenv(layer_build.LAYER_PYTHON_ENV, raising=False)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    return version


def _pyenv_install(tmp_path: Path, release: str, version: str) -> Path:
    python = tmp_path / "pyenv" / "versions" / release / "bin" / f"python{version}"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    return python


def test_a_pyenv_shim_that_does_not_run_gives_way_to_pyenvs_newest_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pyenv's shim for a version installed but not selected exits 127 ("command not found"):
    the build passes over it and runs the interpreter under `$PYENV_ROOT/versions`."""
    version = _this_python_as_the_runtimes(monkeypatch, tmp_path)
    shim = tmp_path / "bin" / f"python{version}"
    shim.write_text("#!/bin/sh\necho 'pyenv: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    _pyenv_install(tmp_path, f"{version}.2", version)
    newest = _pyenv_install(tmp_path, f"{version}.10", version)
    assert layer_build.bytecode_python() == str(newest)


def test_a_python_on_the_path_that_runs_comes_before_pyenv(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    version = _this_python_as_the_runtimes(monkeypatch, tmp_path)
    on_path = tmp_path / "bin" / f"python{version}"
    on_path.symlink_to(sys.executable)
    _pyenv_install(tmp_path, f"{version}.1", version)
    assert layer_build.bytecode_python() == str(on_path)


def test_without_a_python_of_the_runtimes_version_the_layer_ships_sources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _this_python_as_the_runtimes(monkeypatch, tmp_path)
    monkeypatch.setattr(layer_build, "PYTHON_VERSION", "3.99")
    assert layer_build.bytecode_python() is None


def test_the_layer_hash_says_whether_it_holds_bytecode() -> None:
    with_bytecode = layer_build.layer_hash(REPO, bytecode=True)
    assert with_bytecode != layer_build.layer_hash(REPO, bytecode=False)
