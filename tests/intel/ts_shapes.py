"""A small TypeScript project for the mutation tests on typescript-language-server: a class ``Rect``, its
subclass ``Square`` in the same file (what "Move to a new file" moves), and a module importing both."""

from __future__ import annotations

from pathlib import Path

SHAPES = {
    "tsconfig.json": '{"compilerOptions": {"target": "ES2020", "module": "commonjs", "strict": true}, '
    '"include": ["src"]}\n',
    "src/shape.ts": "export abstract class BaseShape {\n  constructor(public name: string) {}\n"
    "  abstract area(): number;\n}\n",
    "src/rect.ts": 'import { BaseShape } from "./shape";\n\n'
    "export class Rect extends BaseShape {\n"
    '  constructor(private w: number, private h: number) {\n    super("rect");\n  }\n'
    "  area(): number {\n    return this.w * this.h;\n  }\n}\n\n"
    "export class Square extends Rect {\n  constructor(side: number) {\n    super(side, side);\n"
    '    this.name = "square";\n  }\n}\n',
    "src/registry.ts": 'import { Rect, Square } from "./rect";\n\n'
    "export const shapes = [new Rect(1, 2), new Square(3)];\n",
}


def write_shapes(folder: Path) -> None:
    for name, text in SHAPES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
