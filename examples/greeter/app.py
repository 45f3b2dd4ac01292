"""One mistake for the demo to find: greet() takes a name, not a number."""

from greet import greet

print(greet("world"))
print(greet(42))
