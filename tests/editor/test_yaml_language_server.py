"""The printed schema works in editors: the YAML language server (the engine of the VS Code YAML
extension), pointed at it by the `# yaml-language-server: $schema=...` line, accepts the examples,
flags a mistake on its line, and completes step keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import REPO, WORKFLOWS
from tests.editor.lsp_client import LspClient

# Installed by `make setup` (npm ci); a missing server is a set-up failure, not a skip.
SERVER = REPO / "node_modules" / ".bin" / "yaml-language-server"


@pytest.fixture(scope="module")
def server() -> Iterator[LspClient]:
    client = LspClient([str(SERVER), "--stdio"], REPO)
    yield client
    client.close()


def test_examples_have_no_diagnostics(server: LspClient) -> None:
    for path in sorted(WORKFLOWS.glob("*.yaml")):
        assert server.open(path, path.read_text()) == [], path.name


def test_a_mistake_is_flagged_on_its_line(server: LspClient) -> None:
    text = (
        (WORKFLOWS / "customer-support.yaml")
        .read_text()
        .replace(
            "    type: agent\n    model: claude-haiku-4-5",
            "    type: agent\n    modle: claude-haiku-4-5",
            1,
        )
    )
    path = WORKFLOWS / "zz-typo-not-on-disk.yaml"
    diagnostics = server.open(path, text)
    line = text.splitlines().index("    modle: claude-haiku-4-5")
    assert any(d["range"]["start"]["line"] == line for d in diagnostics), diagnostics


def test_step_keys_are_completed(server: LspClient) -> None:
    text = (WORKFLOWS / "customer-support.yaml").read_text() + "  extra:\n    type: tool\n    \n"
    path = WORKFLOWS / "zz-completion-not-on-disk.yaml"
    server.open(path, text)
    labels = server.complete(path, len(text.splitlines()) - 1, 4)
    assert {"after", "tool", "args", "retry"} <= set(labels)
