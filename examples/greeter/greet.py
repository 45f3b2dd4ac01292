"""One definition for the demo to find."""


def greet(name: str) -> str:
    return f"Hello, {name}!"
