"""Draw compiled state machines as the Step Functions console lays them out: top to bottom,
each Parallel branch and Map item processor in a box of its own, the happy path in solid
arrows and `Catch` in dashed ones.

    python docs/graphs/draw.py       # statemachines/*.asl.json -> docs/graphs/<name>.svg
    python docs/graphs/draw.py --rev 972b514 --suffix before    # as committed at 972b514

Needs Graphviz's `dot` (Debian: `apt-get install -y graphviz`). The SVGs are committed; no test
or build runs this script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "docs" / "graphs"
SHAPES = {
    "Task": ("box", "#e8f0fe"),
    "Choice": ("diamond", "#fff4e0"),
    "Pass": ("box", "#f3f3f3"),
    "Fail": ("octagon", "#fde2e2"),
    "Wait": ("box", "#f3f3f3"),
    "Succeed": ("box", "#e2f5e2"),
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Drawing:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def node_id(self, scope: str, name: str) -> str:
        return _quote(f"{scope}/{name}")

    def states(self, states: dict[str, Any], start: str, scope: str, indent: str) -> None:
        entry = self.node_id(scope, "▶")
        self.lines.append(f"{indent}{entry} [shape=point, width=0.12];")
        self.lines.append(f"{indent}{entry} -> {self.node_id(scope, start)};")
        for name, state in states.items():
            self.state(name, state, scope, indent)
        for name, state in states.items():
            self.edges(name, state, scope, indent)

    def state(self, name: str, state: dict[str, Any], scope: str, indent: str) -> None:
        kind = state["Type"]
        me = self.node_id(scope, name)
        if kind in ("Parallel", "Map"):
            self.count += 1
            cluster = f"cluster_{self.count}"
            self.lines.append(f"{indent}subgraph {cluster} {{")
            self.lines.append(f'{indent}  label={_quote(name)}; style="rounded"; color="#7a869a";')
            self.lines.append(f'{indent}  {me} [shape=box, style="rounded,filled", '
                              f'fillcolor="#dfe6f0", label={_quote(name)}];')  # fmt: skip
            inner = state.get("Branches") or [state.get("ItemProcessor") or state["Iterator"]]
            for index, branch in enumerate(inner):
                self.count += 1
                self.lines.append(f"{indent}  subgraph cluster_{self.count} {{")
                label = f"branch {index + 1}" if kind == "Parallel" else "each item"
                self.lines.append(f'{indent}    label={_quote(label)}; style="dashed";')
                child = f"{scope}/{name}#{index}"
                self.states(branch["States"], branch["StartAt"], child, indent + "    ")
                self.lines.append(f"{indent}    {me} -> {self.node_id(child, '▶')} "
                                  "[style=dotted, arrowhead=none];")  # fmt: skip
                self.lines.append(f"{indent}  }}")
            self.lines.append(f"{indent}}}")
            return
        shape, fill = SHAPES.get(kind, ("box", "white"))
        style = '"rounded,filled"' if kind != "Choice" else "filled"
        self.lines.append(
            f"{indent}{me} [shape={shape}, style={style}, fillcolor={_quote(fill)}, "
            f"label={_quote(name)}, tooltip={_quote(state.get('Comment', kind))}];"
        )

    def edges(self, name: str, state: dict[str, Any], scope: str, indent: str) -> None:
        me = self.node_id(scope, name)
        targets: list[tuple[str, str]] = []
        if "Next" in state:
            targets.append((state["Next"], "solid"))
        for rule in state.get("Choices", []):
            targets.append((rule["Next"], "solid"))
        if "Default" in state:
            targets.append((state["Default"], "solid"))
        for rule in state.get("Catch", []):
            targets.append((rule["Next"], "dashed"))
        seen: set[tuple[str, str]] = set()
        for target, style in targets:
            if (target, style) in seen:
                continue
            seen.add((target, style))
            colour = "#c0392b" if style == "dashed" else "#34495e"
            edge = f"{me} -> {self.node_id(scope, target)}"
            self.lines.append(f'{indent}{edge} [style={style}, color="{colour}"];')


def dot_text(definition: dict[str, Any], title: str) -> str:
    drawing = Drawing()
    drawing.lines += [
        "digraph machine {",
        "  rankdir=TB; nodesep=0.25; ranksep=0.3;",
        f'  label={_quote(title)}; labelloc="t"; fontname="Helvetica";',
        '  node [fontname="Helvetica", fontsize=10, height=0.3];',
        "  edge [arrowsize=0.6];",
    ]
    drawing.states(definition["States"], definition["StartAt"], "", "  ")
    drawing.lines.append("}")
    return "\n".join(drawing.lines) + "\n"


def _definitions(rev: str | None) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    if rev is None:
        for path in sorted((REPO / "statemachines").glob("*.asl.json")):
            found[path.name.removesuffix(".asl.json")] = json.loads(path.read_text())
        return found
    listing = subprocess.run(
        ["git", "-C", str(REPO), "ls-tree", "--name-only", rev, "statemachines/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    for path in listing:
        text = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{rev}:{path}"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        found[Path(path).name.removesuffix(".asl.json")] = json.loads(text)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="draw the machines committed at this git revision")
    parser.add_argument("--suffix", default="", help="file name suffix, e.g. before")
    args = parser.parse_args()
    for name, definition in _definitions(args.rev).items():
        suffix = f".{args.suffix}" if args.suffix else ""
        title = f"{name}{' (' + args.suffix + ')' if args.suffix else ''}"
        svg = subprocess.run(
            ["dot", "-Tsvg"], input=dot_text(definition, title), check=True,
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        target = OUT / f"{name}{suffix}.svg"
        target.write_text(svg)
        print(f"wrote {target.relative_to(REPO)}")


if __name__ == "__main__":
    main()
