"""Owned children die with their owner, even when the owner is killed with SIGKILL (Linux).

A stop can only run while its owner lives. When ``kandev-lsp`` itself is killed with SIGKILL (by a user,
by an editor that kills its whole process group, by the OOM killer), nothing of ours runs any more, and
every owned child leads a session of its own, so no group signal reaches it either. On Linux the kernel
can do it for us: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, called in the child between ``fork`` and
``exec``, asks for SIGKILL the moment the parent dies. The setting survives ``exec`` (but not a set-uid
``exec``) and is not inherited by the child's own children: those are found by the owner marker by the
next stop or by the next install (see :func:`kandev_lsp.process.reap_marked`).

Two details of the kernel's rule:

* The signal fires when the **thread** that forked the child exits, not the process. :func:`spawn`
  forks on the thread running the event loop, which lives as long as the loop does, and an owned child
  must not outlive its loop anyway (its supervisor is closed with it). A loop running in a worker thread
  therefore takes its children with it when that thread ends, which is the behaviour we want.
* The parent may die between ``fork`` and ``prctl``; the child then belongs to another parent already
  and would never get the signal, so it checks its parent after setting it and kills itself if the
  parent changed.

Elsewhere (macOS, Windows) there is no such signal: :func:`parent_death_hook` returns None and owned
children rely on the owner's stop and on the next install's sweep.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

#: ``PR_SET_PDEATHSIG`` from ``<linux/prctl.h>``.
PR_SET_PDEATHSIG = 1

_prctl: Callable[..., int] | None = None
_loaded = False


def _load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up once, before any fork (a lookup after fork could take locks)."""
    global _prctl, _loaded
    if not _loaded:
        _loaded = True
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.prctl
        except (OSError, AttributeError):
            return None
        function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        function.restype = ctypes.c_int
        _prctl = function
    return _prctl


def parent_death_hook(platform: str = sys.platform) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive SIGKILL when the calling thread's process dies, or
    None where the OS offers no such thing.

    The hook does only async-signal-safe work in the child: one ``prctl`` call through a function pointer
    resolved here, ``getppid`` and, if the parent is already gone, ``kill``.
    """
    if not platform.startswith("linux"):
        return None
    prctl = _load_prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    death_signal = int(signal.SIGKILL)

    def in_child() -> None:
        prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request was in place
            os.kill(os.getpid(), death_signal)

    return in_child
