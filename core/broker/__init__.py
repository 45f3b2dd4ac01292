"""The broker: browser-independent leases between editor clients and each task host's ``serve``.

See ``docs/broker-contract.md``. The modules here are sans-io: plain values in, plain actions out,
with an injected clock, so every rule is tested without a socket (K12, K13, K15, K19).
"""
