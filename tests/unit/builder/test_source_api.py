"""The builder's endpoints over HTTP, on a real engine and database: the file's bytes and ETag,
writes refused when the file changed on disk, the validator and compiler on a posted source,
round-trip edits, installing with the version rules, and bad input answered, never a 500."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.unit.builder.support import EXAMPLES, BuilderStack

SUPPORT = (EXAMPLES / "customer-support.yaml").read_bytes()


def _fresh_name(builder: BuilderStack, stem: str) -> str:
    index = 0
    while (builder.workflows / f"{stem}-{index}.yaml").exists():
        index += 1
    return f"{stem}-{index}"


def test_get_source_answers_the_files_bytes_and_an_etag(builder: BuilderStack) -> None:
    with builder.client() as client:
        answer = client.get("/workflows/customer-support/source")
    assert answer.status_code == 200
    assert answer.content == SUPPORT
    assert answer.headers["content-type"].startswith("application/yaml")
    assert answer.headers["etag"].startswith('"')


def test_source_routes_need_the_token(builder: BuilderStack) -> None:
    with builder.client(token=None) as client:
        assert client.get("/workflows/customer-support/source").status_code == 401
        put = client.put("/workflows/customer-support/source", content=b"x")
        assert put.status_code == 401
        assert client.post("/validate", content=SUPPORT).status_code == 401
    assert (builder.workflows / "customer-support.yaml").read_bytes() == SUPPORT


def test_put_writes_the_file_and_refuses_when_it_changed_on_disk(builder: BuilderStack) -> None:
    name = _fresh_name(builder, "edited")
    path = builder.workflows / f"{name}.yaml"
    original = SUPPORT.replace(b"name: customer-support", f"name: {name}".encode())
    with builder.client() as client:
        created = client.put(f"/workflows/{name}/source", content=original)
        assert created.status_code == 200, created.text
        assert created.json()["ok"] is True
        assert path.read_bytes() == original
        loaded = client.get(f"/workflows/{name}/source")
        etag = loaded.headers["etag"]
        # someone else edits the file on disk after it was loaded
        path.write_bytes(original + b"# edited by hand\n")
        refused = client.put(
            f"/workflows/{name}/source", content=original, headers={"If-Match": etag}
        )
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "source_changed"
        assert path.read_bytes() == original + b"# edited by hand\n"
        missing = client.put(f"/workflows/{name}/source", content=original)
        assert missing.status_code == 428
        current = client.get(f"/workflows/{name}/source").headers["etag"]
        saved = client.put(
            f"/workflows/{name}/source", content=original, headers={"If-Match": current}
        )
        assert saved.status_code == 200
        assert saved.headers["etag"] == client.get(f"/workflows/{name}/source").headers["etag"]
    assert path.read_bytes() == original


def test_file_names_stay_in_the_workflows_folder(builder: BuilderStack) -> None:
    outside = builder.workflows.parent / "escape.yaml"
    with builder.client() as client:
        for name in ("..%2Fescape", "%2Fetc%2Fpasswd", "Upper", "a.b", "x" * 70):
            answer = client.put(f"/workflows/{name}/source", content=b"switchyard: 1\n")
            assert answer.status_code in (400, 404), (name, answer.status_code)
            assert answer.status_code != 500
            got = client.get(f"/workflows/{name}/source")
            assert got.status_code in (400, 404), (name, got.status_code)
    assert not outside.exists()
    assert not list(builder.workflows.glob(".*.tmp"))


def test_validate_answers_diagnostics_with_code_path_line(builder: BuilderStack) -> None:
    broken = SUPPORT.replace(b"after: [draft]\n    assignee", b"after: [drafts]\n    assignee")
    with builder.client() as client:
        good = client.post("/validate", content=SUPPORT, headers={"Content-Type": "text/yaml"})
        bad = client.post("/validate", content=broken)
        as_json = client.post("/validate", json={"source": broken.decode()})
    assert good.status_code == 200
    assert good.json()["ok"] is True
    assert good.json()["outputs"]["classify"]["required"] == ["label", "confidence"]
    body = bad.json()
    assert body["ok"] is False
    [problem] = [d for d in body["diagnostics"] if d["code"] == "unknown_step"]
    assert problem["code"] == "unknown_step"
    assert problem["path"] == "steps.approve.after[0]"
    line = SUPPORT.decode().splitlines().index("    after: [draft]", 40) + 1
    assert problem["line"] == line
    assert "draft" in problem["message"]
    assert as_json.json() == body


def test_yaml_errors_and_bad_bytes_are_diagnostics_not_500(builder: BuilderStack) -> None:
    sources = [b"steps: [unclosed\n", b"\xff\xfe not utf-8", b"", b"- a list\n", b"a: b: c\n"]
    with builder.client() as client:
        for source in sources:
            for route in ("/validate", "/compile"):
                answer = client.post(route, content=source)
                assert answer.status_code == 200, (route, source, answer.text)
                body = answer.json()
                assert body["ok"] is False
                assert body["diagnostics"], (route, source)
                assert all(
                    {"code", "path", "line", "message"} <= set(d) for d in body["diagnostics"]
                )
        too_big = client.post("/validate", content=b"#" * (1024 * 1024 + 1))
        assert too_big.status_code == 413
        not_json = client.post(
            "/validate", content=b"{", headers={"Content-Type": "application/json"}
        )
        assert not_json.status_code == 400


def test_a_cycle_is_the_validators_error_on_the_steps(builder: BuilderStack) -> None:
    source = SUPPORT.replace(
        b"    after: [classify]\n    when", b"    after: [classify, send]\n    when"
    )
    with builder.client() as client:
        body = client.post("/validate", content=source).json()
    cycles = [d for d in body["diagnostics"] if d["code"] == "cycle"]
    assert cycles and all(d["path"].startswith("steps.") for d in cycles)


def test_compile_answers_the_definition_and_notes(builder: BuilderStack) -> None:
    with builder.client() as client:
        body = client.post("/compile", content=SUPPORT).json()
    assert body["ok"] is True
    assert body["definition"]["StartAt"]
    assert "States" in body["definition"]
    assert isinstance(body["notes"], list)


def test_apply_keeps_the_bytes_and_edits_one_line(builder: BuilderStack) -> None:
    text = SUPPORT.decode()
    data = yaml.safe_load(text)
    with builder.client() as client:
        same = client.post("/builder/apply", json={"source": text, "document": data}).json()
        data["steps"]["classify"]["prompt"] = "Classify: {{ inputs.body }}"
        changed = client.post("/builder/apply", json={"source": text, "document": data}).json()
        bad = client.post("/builder/apply", json={"source": "a: [", "document": {}})
    assert same["source"] == text
    before, after = text.splitlines(), changed["source"].splitlines()
    differing = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert differing == [
        (
            '    prompt: "Classify this ticket: {{ inputs.body }}"',
            '    prompt: "Classify: {{ inputs.body }}"',
        )
    ]
    assert bad.status_code == 400


def test_install_publishes_a_new_version_and_keeps_the_version_rules(
    builder: BuilderStack,
) -> None:
    name = _fresh_name(builder, "installed")
    source = SUPPORT.replace(b"name: customer-support", f"name: {name}".encode()).replace(
        b"version: 1", b"version: 2"
    )
    path: Path = builder.workflows / f"{name}.yaml"
    with builder.client() as client:
        assert client.put(f"/workflows/{name}/source", content=source).status_code == 200
        first = client.post(f"/workflows/{name}/install")
        assert first.status_code == 201, first.text
        assert first.json()["version"] == 2
        assert client.get(f"/workflows/{name}").json()["version"] == 2
        again = client.post(f"/workflows/{name}/install")
        assert again.status_code == 200
        assert again.json()["already_installed"] is True
        etag = client.get(f"/workflows/{name}/source").headers["etag"]
        changed = source.replace(b"timeout: 30s", b"timeout: 40s")
        client.put(f"/workflows/{name}/source", content=changed, headers={"If-Match": etag})
        refused = client.post(f"/workflows/{name}/install")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "version_exists"
        etag = client.get(f"/workflows/{name}/source").headers["etag"]
        bumped = changed.replace(b"version: 2", b"version: 3")
        client.put(f"/workflows/{name}/source", content=bumped, headers={"If-Match": etag})
        second = client.post(f"/workflows/{name}/install")
        assert second.status_code == 201
        assert client.get(f"/workflows/{name}").json()["version"] == 3
        etag = client.get(f"/workflows/{name}/source").headers["etag"]
        older_source = source.replace(b"version: 2", b"version: 1")
        client.put(f"/workflows/{name}/source", content=older_source, headers={"If-Match": etag})
        older = client.post(f"/workflows/{name}/install")
        assert older.status_code == 409
        assert older.json()["error"]["code"] == "version_older"
        etag = client.get(f"/workflows/{name}/source").headers["etag"]
        client.put(f"/workflows/{name}/source", content=b"steps: [", headers={"If-Match": etag})
        invalid = client.post(f"/workflows/{name}/install")
        assert invalid.status_code == 400
        assert invalid.json()["error"]["code"] == "invalid_workflow"
    assert path.read_bytes() == b"steps: ["


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
    for i in range(8)
)


def test_an_alias_bomb_is_a_diagnostic_and_is_never_saved(builder: BuilderStack) -> None:
    with builder.client() as client:
        for route in ("/validate", "/compile"):
            body = client.post(route, content=BOMB).json()
            assert body["ok"] is False
            assert body["diagnostics"][0]["code"] == "parse"
            assert "aliases" in body["diagnostics"][0]["message"]
        refused = client.put("/workflows/alias-bomb/source", content=BOMB)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "source_expands"
        applied = client.post("/builder/apply", json={"source": BOMB, "document": {}})
        assert applied.status_code == 400
    assert not (builder.workflows / "alias-bomb.yaml").exists()
