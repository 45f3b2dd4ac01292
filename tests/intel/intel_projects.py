"""Small fixture projects for the wired tools, written into a temporary folder by each test."""

from __future__ import annotations

from pathlib import Path

PYTHON = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n',
    "lib.py": (
        "class Animal:\n"
        "    def speak(self) -> str:\n"
        '        return "..."\n'
        "\n"
        "\n"
        "class Dog(Animal):\n"
        "    def speak(self) -> str:\n"
        '        return "woof"\n'
        "\n"
        "\n"
        "def greet(name: str, excited: bool = False) -> str:\n"
        '    """Say hello to name."""\n'
        '    return "hello " + name\n'
        "\n"
        "\n"
        "def helper() -> str:\n"
        '    return greet("helper")\n'
    ),
    "app.py": (
        "from lib import Dog, greet\n"
        "\n"
        "\n"
        "def main() -> None:\n"
        '    print(greet("world"))\n'
        "    print(Dog().speak())\n"
        '    value: int = greet("again")\n'
    ),
}

TYPESCRIPT = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020"}, "include": ["src"]}\n',
    "src/lib.ts": (
        "export interface Shape {\n"
        "  area(): number;\n"
        "}\n"
        "\n"
        "export class Square implements Shape {\n"
        "  constructor(private side: number) {}\n"
        "  area(): number {\n"
        "    return this.side * this.side;\n"
        "  }\n"
        "}\n"
        "\n"
        "export function greet(name: string, excited = false): string {\n"
        '  return "hello " + name + (excited ? "!" : "");\n'
        "}\n"
    ),
    "src/app.ts": (
        'import { greet, Square } from "./lib";\n'
        "\n"
        "export function main(): void {\n"
        '  console.log(greet("world"));\n'
        "  const total = new Square(2).area();\n"
        '  const wrong: number = greet("again");\n'
        "  console.log(total, wrong);\n"
        "}\n"
    ),
}


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder
