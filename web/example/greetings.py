"""A small workspace for the reference page: something to hover, a definition to jump to, and one
deliberate type error for pyright to mark."""


def greeting(name: str) -> str:
    """The greeting for ``name``."""
    return "Hello, " + name


def shout(name: str) -> str:
    return greeting(name).upper()


count: int = greeting("world")  # deliberate: a str is not an int
