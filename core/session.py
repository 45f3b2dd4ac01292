"""One running language server: its owned process, LSP framing, configuration answers, live settings.

A :class:`ServerSession` is what every front end talks to: the task-host WebSocket stream, the stdio
``kandev-lsp run`` command, and later the broker and the agent tools. It knows nothing about WebSockets:
callers hand it message bodies (:meth:`ServerSession.send`) and read message bodies from an
:class:`Attachment` (:meth:`ServerSession.attach`, or :meth:`ServerSession.messages`). The server outlives
its clients: one reader task always drains its stdout (K15.11) and queues each message for every
attachment (bounded; never waiting), or, with nothing attached, lets a headless
:class:`~kandev_lsp.lsp.Endpoint` answer the server's requests and track its progress, registrations and
diagnostics; :meth:`ServerSession.stop` ends it gracefully (``shutdown``, ``exit``, wait, stop). In between it

* frames and unframes with :mod:`kandev_lsp.protocol` under :class:`BridgeLimits` (one decoder loop,
  :func:`read_frames`, reads frames from any :class:`asyncio.StreamReader`; the session's reader inlines
  it to know where one read's messages end),
* answers the server's ``workspace/configuration`` requests itself from the language's merged settings
  (plugin defaults + the user's ``lsp_server_configs``), so every client gets the same configuration;
  with ``ask_client_configuration`` (``kandev-lsp run``) and a client that advertises
  ``workspace.configuration``, it asks the client too and merges the client's answer over its own
  (:func:`merge_configuration_answers`), so an editor's server settings still apply,
* injects the plugin's ``initializationOptions`` (and ``workspace.configuration`` support) into the
  client's ``initialize`` when the client sent none,
* re-reads the settings file on a cheap timer and sends ``workspace/didChangeConfiguration`` when this
  language's settings changed,
* cuts off a write to the server's stdin that does not drain within ``stdin_write_timeout``.

Only the first messages of a session are parsed (until the client's ``initialized`` and the server's
``initialize`` result); after that the hot path is a byte search for ``workspace/configuration``, so
large messages cost no JSON work. Server requests forwarded to a client are tracked (small bodies with
both a ``"method"`` and an ``"id"`` key, found by the same kind of byte search, are parsed) until the
client answers them; the ones a client leaves unanswered when it detaches get the headless endpoint's
default answers, so the server never waits for a client that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

from kandev_lsp._values import dataclass
from kandev_lsp.configuration import merge_settings
from kandev_lsp.errors import KandevLspError
from kandev_lsp.language import LanguageSpec
from kandev_lsp.protocol import DEFAULT_LIMITS, NEED_DATA, FrameDecoder, FrameLimits, encode_header
from kandev_lsp.protocol.errors import MalformedMessage, ProtocolError
from kandev_lsp.protocol.jsonrpc import (
    MessageKind,
    RequestId,
    classify,
    dump_message,
    notification,
    parse_message,
    response,
)
from kandev_lsp.settings import ConfigurationAnswerer, SettingsFile, UserSettings, language_settings

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.lsp import Endpoint
    from kandev_lsp.process import ProcessSupervisor
    from kandev_lsp.taskenv import Task

log = logging.getLogger("kandev_lsp.session")

_CONFIGURATION = b"workspace/configuration"
_INITIALIZE = b"initialize"  # also matches "initialized"
_SHUTDOWN = b'"shutdown"'
_EXIT = b'"exit"'
#: ``shutdown`` and ``exit`` are tiny messages; only bodies up to this size are checked for them.
_LIFECYCLE_LIMIT = 512
#: Bodies smaller than this are joined to their header and written at once.
_JOIN_BELOW = 64 * 1024
#: Only bodies up to this size are searched for ``initialize``/``workspace/configuration``: those messages
#: are small, and large ones (file contents, big results) then cost no scan at all. A configuration request
#: larger than this (thousands of items) would reach the client unanswered, which answers it instead.
_INSPECT_LIMIT = 256 * 1024
#: Ids of the ``workspace/configuration`` requests the session forwards to the client (never a client's).
_FORWARDED_PREFIX = "kandev-lsp-cfg-"
_FORWARDED_MARK = _FORWARDED_PREFIX.encode()
#: What a server->client request has that most other traffic lacks: both keys, as bytes (a string's own
#: quotes are escaped, so text inside a string never matches). Only such bodies are parsed to be tracked.
_METHOD_KEY = b'"method"'
_ID_KEY = b'"id"'
#: What a client's answer to a server request has (a request or notification rarely carries either).
_RESULT_KEY = b'"result"'
_ERROR_KEY = b'"error"'
#: Bytes searched at each end of a larger body for those keys. Every member of a request or response but
#: ``params``/``result`` is small (``jsonrpc``, an id of at most 256 bytes, the method's name), so each key
#: lies before the one large value or after it, within this window of the body's start or end, whatever
#: the serializer's member order: the check is exact and costs the same for 2 KiB and for 16 MiB.
_KEY_WINDOW = 1024
#: Server->client requests tracked at once while forwarded to clients; past it the oldest is answered by
#: the router's default at once (a client this far behind is not answering it) and its id remembered, so a
#: late client answer to it is dropped instead of reaching the server a second time.
_TRACK_MAX = 256
#: Pipe capacity asked for on Linux: a 1 MiB message then crosses in one write instead of sixteen.
_PIPE_SIZE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BridgeLimits:
    """Limits and deadlines of a session and of the bridges in front of it.

    :param frame: LSP framing limits; ``frame.body`` is also the largest message accepted from a client.
    :param client_write_timeout: deadline of every write to the client (a WebSocket send, the editor's
        stdout); a client that misses it is disconnected and its server stopped.
    :param stdin_write_timeout: cut-off of each write (write + drain) to the server's stdin.
    :param settings_poll_interval: how often the settings file is checked for changes (a ``stat``).
    :param exit_drain_timeout: after the server exits, how long its remaining output is still forwarded.
    :param exit_grace: after the client leaves, how long the server may take to exit by itself (its stdin
        is closed first) before it is stopped.
    :param stop_grace: time between the interrupt and the kill when a server is stopped.
    :param read_chunk: bytes read from a pipe at once.
    :param client_configuration_timeout: how long a ``workspace/configuration`` request forwarded to the
        client may wait for its answer; then the server gets the session's own answer.
    :param attachment_queue_bytes: server output queued for one attachment that has not taken it yet;
        over it the attachment is dropped (:class:`ClientTooSlow`) and the reader goes on (K15.11).
    :param shutdown_timeout: how long a graceful :meth:`ServerSession.stop` waits for ``shutdown``'s answer.
    """

    frame: FrameLimits = DEFAULT_LIMITS
    client_write_timeout: float = 5.0
    stdin_write_timeout: float = 30.0
    settings_poll_interval: float = 1.5
    exit_drain_timeout: float = 1.0
    exit_grace: float = 1.0
    stop_grace: float = 2.0
    read_chunk: int = 256 * 1024
    client_configuration_timeout: float = 5.0
    attachment_queue_bytes: int = 32 * 1024 * 1024
    shutdown_timeout: float = 2.0

    @property
    def max_message(self) -> int:
        """The largest message body, in bytes, in either direction."""
        return self.frame.body


DEFAULT_BRIDGE_LIMITS = BridgeLimits()


def merge_configuration_answers(ours: Sequence[Any], client: Any) -> list[Any]:
    """Merge a client's ``workspace/configuration`` result over the session's own, item by item (pure).

    The client (an editor's own server settings) wins: an object over an object is a shallow merge
    with the client's keys replacing ours; a client ``null`` keeps our value (editors answer ``null``
    for sections they have no settings for); any other client value replaces ours. A client result
    that is not a list of the same length is ignored (ours is kept whole).
    """
    if not isinstance(client, list) or len(client) != len(ours):
        return list(ours)
    merged: list[Any] = []
    for mine, theirs in zip(ours, client, strict=True):
        if theirs is None:
            merged.append(mine)
        elif isinstance(mine, Mapping) and isinstance(theirs, Mapping):
            merged.append({**mine, **theirs})
        else:
            merged.append(theirs)
    return merged


@dataclass(slots=True)
class _ForwardedConfiguration:
    """A server's configuration request forwarded to the client, waiting for the client's answer."""

    server_id: int | str
    ours: list[Any]
    timer: asyncio.TimerHandle


@dataclass(slots=True)
class _ServerRequest:
    """A server->client request queued for clients and not answered yet: its body (kept for the
    headless endpoint's default answer) and the attachments it reached that are still attached."""

    body: bytes
    waiting: list[Attachment]


def _has_key(body: bytes, key: bytes) -> bool:
    """Whether ``key`` is in ``body``'s first or last :data:`_KEY_WINDOW` bytes (the whole of a small one)."""
    size = len(body)
    if size <= 2 * _KEY_WINDOW:
        return key in body
    return body.find(key, 0, _KEY_WINDOW) >= 0 or body.find(key, size - _KEY_WINDOW) >= 0


def _may_be_request(body: bytes) -> bool:
    """A cheap byte check, before any JSON parse: might ``body`` be a request (a ``method`` and an ``id``)?"""
    return _has_key(body, _METHOD_KEY) and _has_key(body, _ID_KEY)


class SessionError(KandevLspError):
    """A session can no longer talk to its server."""


class StdinStalled(SessionError):
    """The server did not read its stdin within the cut-off; it is considered hung."""


class ServerGone(SessionError):
    """The server's stdin is closed: the server exited or closed it."""


class ClientTooSlow(SessionError):
    """An attachment let more server output queue up than ``limits.attachment_queue_bytes``: it was
    dropped so the server's reader never waits for it (K15.11)."""


class _EndOfOutput(Exception):
    """The server closed its stdout (or the attachment was detached): the attachment's stream ends."""


_END = _EndOfOutput()


class Attachment:
    """One consumer of a :class:`ServerSession`'s output: a bounded queue the session's reader fills.

    Made by :meth:`ServerSession.attach`; read with :meth:`messages` (once); ends with
    :meth:`ServerSession.detach` (or by closing the generator), which leaves the server running.
    """

    __slots__ = (
        "_bytes",
        "_end",
        "_flush",
        "_holding",
        "_items",
        "_waiter",
        "_write_now",
        "max_bytes",
        "name",
        "session",
    )

    def __init__(self, session: ServerSession, max_bytes: int, name: str) -> None:
        self.session = session
        self.max_bytes = max_bytes
        self.name = name
        self._items: deque[bytes] = deque()
        self._bytes = 0
        self._end: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._write_now: Callable[[bytes], bool] | None = None
        self._flush: Callable[[], None] | None = None
        self._holding = False  # ``write`` took a body since the last ``flush``

    def write_directly(
        self, write: Callable[[bytes], bool] | None, flush: Callable[[], None] | None = None
    ) -> None:
        """Let the session's reader hand each body to ``write`` itself while nothing is queued here and
        the reader of :meth:`messages` is idle, waiting for the next one.

        Why: queueing a body and waking the reader of :meth:`messages` costs a task switch (an event-loop
        turn) per message, which the plain serve/run path (one client, keeping up) need not pay. ``write``
        must never wait (the session's reader never waits for a client, K15.11): it writes ``body`` at
        once and returns True, or returns False when it cannot without waiting (e.g. its transport is
        over its high-water mark); the body is then queued as usual (bounded), and the reader of
        :meth:`messages` sends it under its own write deadline. An exception ``write`` raises (a client
        that is gone, a body it cannot carry) ends this attachment and is raised by :meth:`messages`.
        Order is kept: a body is written directly only when nothing is queued before it.

        ``flush``, when given, lets ``write`` hold bodies back: the session calls it (it must not wait
        either) once the messages of one read from the server's stdout have all been dispatched, before
        the reader next waits, so several messages that arrived together cost the client's transport one
        write (one system call) instead of one each, and none is held past that moment.
        """
        self._write_now = write
        self._flush = flush

    @property
    def ended(self) -> bool:
        return self._end is not None

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    def _put(self, body: bytes) -> bool:
        """Write ``body`` directly (:meth:`write_directly`) or queue it; never waits. False when this
        attachment is over its bound or ended (then or before)."""
        if self._end is not None:
            return False
        write = self._write_now
        if write is not None and self._waiter is not None and not self._items:
            # The reader of messages() is parked on its waiter with nothing queued: nobody is sending.
            try:
                if write(body):
                    if self._flush is not None and not self._holding:
                        self._holding = True
                        self.session._holding.append(self)
                    return True
            except Exception as exc:  # the client is gone, or cannot carry this body: messages() raises it
                self._finish(exc)
                return False
        self._bytes += len(body)
        if self._bytes > self.max_bytes:
            self._items.clear()
            self._bytes = 0
            self._finish(
                ClientTooSlow(
                    f"{self.name} did not keep up with {self.session.name}: over "
                    f"{self.max_bytes} bytes of its output were waiting"
                )
            )
            return False
        self._items.append(body)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return True

    def _flush_held(self) -> None:
        """Write what ``write`` held back (see :meth:`write_directly`); a failure ends this attachment."""
        self._holding = False
        flush = self._flush
        if flush is None:
            return
        try:
            flush()
        except Exception as exc:
            self._finish(exc)
            self.session.detach(self)

    def _finish(self, end: BaseException) -> None:
        if self._end is None:
            self._end = end
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def messages(self) -> AsyncGenerator[bytes, None]:
        """The server's message bodies (except what the session answers itself) until the server closes
        its output (the generator returns) or this attachment is detached; detaches when closed.

        :raises ClientTooSlow: this attachment fell too far behind and was dropped.
        :raises kandev_lsp.protocol.RemoteProtocolError: the server's output is not LSP framing.
        :raises kandev_lsp.protocol.ReceivedFrameTooLarge: the server sent a frame over the limit.
        """
        items = self._items
        loop = asyncio.get_running_loop()
        try:
            while True:
                while items:
                    body = items.popleft()
                    self._bytes -= len(body)
                    yield body
                end = self._end
                if end is not None:
                    if end is _END:
                        return
                    raise end
                self._waiter = loop.create_future()
                await self._waiter
                self._waiter = None
        finally:
            self.session.detach(self)


class ServerProcess(Protocol):
    """What a session needs from an owned process (:class:`kandev_lsp.process.OwnedProcess`)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    stdin: asyncio.StreamWriter | None
    stdout: asyncio.StreamReader | None

    async def wait(self) -> int: ...

    async def stop(self, grace: float = ...) -> Any: ...


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: object) -> None:
    """Log ``event=<event> key=value ...``: grep-able and machine-readable. Never pass source text,
    tokens or file paths other than the workspace root."""
    if not logger.isEnabledFor(level):
        return
    parts = [f"event={event}"]
    for key, value in fields.items():
        text = "" if value is None else str(value)
        if not text or not text.isprintable() or any(ch in ' "=' for ch in text):
            text = '"' + "".join(_LOG_ESCAPES.get(ch) or _log_char(ch) for ch in text) + '"'
        parts.append(f"{key}={text}")
    logger.log(level, " ".join(parts))


_LOG_ESCAPES: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}


def _log_char(ch: str) -> str:
    """``ch`` as written in a log value: control and other unprintable characters (``\\r``, terminal
    escapes, U+2028) escaped, so a value can neither forge a line nor drive a terminal."""
    if ch.isprintable():
        return ch
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


async def read_frames(
    reader: asyncio.StreamReader,
    limits: FrameLimits = DEFAULT_LIMITS,
    *,
    peer: str = "peer",
    chunk: int = DEFAULT_BRIDGE_LIMITS.read_chunk,
) -> AsyncGenerator[bytes, None]:
    """Yield the body of every LSP frame read from ``reader`` until its end.

    The one framing pump of kandev-lsp: the stream and ``run`` read the server's stdout with it, ``run``
    also reads the editor's stdin. Close it with :func:`contextlib.aclosing` when you stop early.

    :raises kandev_lsp.protocol.RemoteProtocolError: malformed framing, or a stream that ends inside a
        frame.
    :raises kandev_lsp.protocol.ReceivedFrameTooLarge: a frame over ``limits``, detected from its headers
        before its body is buffered.
    """
    decoder = FrameDecoder(limits, peer=peer)
    while True:
        data = await reader.read(chunk)
        if data:
            decoder.receive_data(data)
        else:
            decoder.receive_eof()
        while (frame := decoder.next_frame()) is not NEED_DATA:
            yield frame
        if not data:
            return


def _keep_reads_off_mmap() -> None:
    """Make glibc serve asyncio's read buffers from the heap instead of a fresh mapping per read (once per
    process; Linux with glibc only, best effort).

    asyncio reads sockets and pipes into a new 256 KiB buffer (then shrinks it to what arrived), and
    glibc's default ``M_MMAP_THRESHOLD`` is 128 KiB: until the process happens to free a mapped block
    larger than that (which raises the threshold, see mallopt(3)), every read of a 1 KiB message costs
    mmap, a page fault, mremap and munmap. Measured on a 2-core VM: 55-70 us per pipe read against 5-7 us
    from the heap, twice per round trip through the bridge (the client's frame and the server's answer).
    The thresholds set here are what glibc would reach by itself after the first 2 MiB message; with them
    set, larger blocks (big messages) are still mapped and given back to the system at once, and at
    most ``M_TRIM_THRESHOLD`` of free heap is kept for reuse.
    """
    global _allocator_tuned
    if _allocator_tuned:
        return
    _allocator_tuned = True
    if not sys.platform.startswith("linux"):
        return
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
    except (ValueError, OSError):
        return  # not glibc (musl has no such name): its allocator has its own rules
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        mallopt = ctypes.CDLL(None).mallopt
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD)


_allocator_tuned = False
#: mallopt(3) parameter numbers (glibc's ``<malloc.h>``) and the threshold set.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 2 * 1024 * 1024


def _enlarge_pipes(process: ServerProcess) -> None:
    """Ask Linux for 1 MiB pipes (F_SETPIPE_SZ) to and from the server: a large message then crosses in
    one write instead of sixteen, which doubles the bridge's throughput for 1 MiB messages.

    Best effort: other systems, or a lowered ``fs.pipe-max-size``, keep the default size, which only
    costs speed. The stdout pipe is reached through the child's end in ``/proc``, since asyncio does not
    expose the read end it holds.
    """
    if not sys.platform.startswith("linux"):
        return
    import fcntl

    set_size = getattr(fcntl, "F_SETPIPE_SZ", 1031)
    if process.stdin is not None:
        pipe = process.stdin.transport.get_extra_info("pipe")
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                fcntl.fcntl(pipe.fileno(), set_size, _PIPE_SIZE)
    if process.stdout is not None:
        with contextlib.suppress(OSError):
            fd = os.open(f"/proc/{process.pid}/fd/1", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                fcntl.fcntl(fd, set_size, _PIPE_SIZE)
            finally:
                os.close(fd)


class ServerSession:
    """A language server started for one task, spoken to in message bodies.

    Create it with :meth:`start` (spawn a resolved argv) or wrap an already started process with the
    constructor; always finish with :meth:`aclose`, which stops the whole process tree.
    """

    def __init__(
        self,
        process: ServerProcess,
        *,
        language: LanguageSpec,
        plugins: PluginHost,
        settings: SettingsFile | None = None,
        limits: BridgeLimits = DEFAULT_BRIDGE_LIMITS,
        name: str = "",
        ask_client_configuration: bool = False,
    ) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError("a session needs a process started with piped stdin and stdout")
        self.process = process
        self.language = language
        self.limits = limits
        self.name = name or f"{language.id}[{process.pid}]"
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._plugins = plugins
        self._settings_file = settings
        self._answerer = ConfigurationAnswerer(plugins, language)
        self._defaults = plugins.default_settings(language)
        self._settings_override: dict[str, Any] | None = None  # use_settings(): the stream client's
        self._settings = self._read_settings()
        self._inspect_client = True
        self._initialize_id: int | str | None = None
        self._client_initialized = False
        self._shutdown_requested = False
        self._exit_sent = False
        self._ask_client_configuration = ask_client_configuration
        self._client_configuration = False  # the client advertised workspace.configuration
        self._forwarded: dict[str, _ForwardedConfiguration] = {}
        self._forwarded_count = 0
        #: Server requests forwarded to clients and not answered yet, oldest first (:meth:`_track`).
        self._server_requests: dict[RequestId, _ServerRequest] = {}
        #: Ids answered by default while a client may still answer them (evicted past ``_TRACK_MAX``).
        self._answered_for_clients: dict[RequestId, None] = {}
        self.server_capabilities: Mapping[str, Any] | None = None
        self.configuration_requests = 0
        #: The server's exit status if it exited by itself, set by :meth:`aclose`.
        self.exit_status: int | None = None
        self._closed = False
        self._watcher: asyncio.Task[None] | None = None
        self._attachments: list[Attachment] = []
        #: Attachments whose direct writer holds bodies back until the current read's messages are out.
        self._holding: list[Attachment] = []
        self._attached_count = 0
        self._reader: asyncio.Task[None] | None = None
        #: Why the server's output ended (:data:`_END` or the framing error), None while it flows.
        self._output_end: BaseException | None = None
        self._headless: Endpoint | None = None
        self._client_initialize: dict[str, Any] | None = None
        self._shutdown_answer: asyncio.Future[None] | None = None
        self._shutdown_id: RequestId | None = None

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        task: Task,
        *,
        language: LanguageSpec,
        plugins: PluginHost,
        settings: SettingsFile | None = None,
        limits: BridgeLimits = DEFAULT_BRIDGE_LIMITS,
        supervisor: ProcessSupervisor | None = None,
        stderr: Callable[[str], None] | None = None,
        ask_client_configuration: bool = False,
    ) -> ServerSession:
        """Spawn ``argv`` in the task's workspace with the task's environment and wrap it.

        The server's stderr is captured (bounded) for diagnostics; ``stderr``, when given, also receives
        it as it arrives (``run`` passes it on to the editor's stderr).

        :raises kandev_lsp.process.ProcessStartError: the process could not be started.
        """
        from kandev_lsp.process import spawn

        process = await spawn(
            list(argv),
            env=task.env,
            cwd=task.workspace,
            stdin=True,
            stdout="pipe",
            stderr="capture",
            supervisor=supervisor,
            on_output=stderr,
        )
        return await cls.wrap(
            process,
            language=language,
            plugins=plugins,
            settings=settings,
            limits=limits,
            ask_client_configuration=ask_client_configuration,
        )

    @classmethod
    async def wrap(
        cls,
        process: ServerProcess,
        *,
        language: LanguageSpec,
        plugins: PluginHost,
        settings: SettingsFile | None = None,
        limits: BridgeLimits = DEFAULT_BRIDGE_LIMITS,
        ask_client_configuration: bool = False,
    ) -> ServerSession:
        """A session around a server already spawned with piped stdin/stdout (``run`` spawns first and
        imports this module afterwards, so the server's start-up overlaps kandev-lsp's). Stops the
        process if the session cannot be made."""
        try:
            _keep_reads_off_mmap()
            _enlarge_pipes(process)
            session = cls(
                process,
                language=language,
                plugins=plugins,
                settings=settings,
                limits=limits,
                ask_client_configuration=ask_client_configuration,
            )
            session.watch_settings()
        except BaseException:
            await process.stop(limits.stop_grace)
            raise
        return session

    # Settings -----------------------------------------------------------------------------------------
    @property
    def settings(self) -> dict[str, Any]:
        """The language's merged settings as the server currently sees them."""
        return dict(self._settings)

    def _read_settings(self) -> dict[str, Any]:
        if self._settings_override is not None:  # the stream client's, in place of the file's
            return merge_settings(self._defaults, self._settings_override)
        user = self._settings_file.current()[0] if self._settings_file else UserSettings()
        return language_settings(self._defaults, user, self.language.id)

    def use_settings(self, settings: Mapping[str, Any] | None) -> bool:
        """The stream client's settings request (the broker's settings frame): ``settings`` is this
        language's configuration to use from now on in place of the settings file's (a lease owner's,
        K14.9; the plugin's defaults still underneath), ``None`` re-reads the settings file now (K14.11).
        Returns whether the server's settings changed; an initialized server was then sent
        ``workspace/didChangeConfiguration`` before this returns."""
        if settings is not None:
            self._settings_override = dict(settings)
        return self.refresh_settings()

    def refresh_settings(self) -> bool:
        """Re-read the settings; when this language's changed, tell an initialized server. Cheap (a stat).

        Changes are detected by value per session, so many sessions can share one :class:`SettingsFile`.
        """
        fresh = self._read_settings()
        if fresh == self._settings:
            return False
        self._settings = fresh
        log_event(log, "settings_changed", session=self.name, notified=self._client_initialized)
        if self._client_initialized:
            self._write(dump_message(notification("workspace/didChangeConfiguration", {"settings": fresh})))
        return True

    def watch_settings(self) -> None:
        """Start polling the settings file (every ``limits.settings_poll_interval`` seconds)."""
        if self._settings_file is not None and self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._poll_settings())

    async def _poll_settings(self) -> None:
        while True:
            await asyncio.sleep(self.limits.settings_poll_interval)
            if self._stdin.is_closing():
                return
            try:
                self.refresh_settings()
            except ServerGone:
                return
            except Exception:  # a settings problem must never take the session down
                log.exception("event=settings_refresh_failed session=%s", self.name)

    # Client -> server ----------------------------------------------------------------------------------
    async def send(self, body: bytes) -> None:
        """Write one message body to the server and wait until the pipe accepted it.

        :raises StdinStalled: the server did not read it within ``limits.stdin_write_timeout``.
        :raises ServerGone: the server's stdin is closed.
        :raises kandev_lsp.protocol.FrameTooLargeToSend: the body is over the frame limit.
        """
        if self._inspect_client and len(body) <= _INSPECT_LIMIT and _INITIALIZE in body:
            body = self._inspect_client_message(body)
        elif len(body) <= _LIFECYCLE_LIMIT and (_EXIT in body or _SHUTDOWN in body):
            self._note_lifecycle(body)
        if (
            self._forwarded
            and len(body) <= _INSPECT_LIMIT
            and _FORWARDED_MARK in body
            and self._take_client_configuration(body)
        ):
            return  # the client's answer to a forwarded request: the server got the merged answer
        if (
            (self._server_requests or self._answered_for_clients)
            and (body.find(_RESULT_KEY, 0, _KEY_WINDOW) >= 0 or body.find(_ERROR_KEY, 0, _KEY_WINDOW) >= 0)
            and self._take_client_answer(body)
        ):
            return  # a late answer to a request the session already answered
        self._write(body)
        try:
            if not self._stdin.transport.get_write_buffer_size():
                await self._stdin.drain()  # the pipe took it all: drain cannot wait (no timer needed)
                return
            async with asyncio.timeout(self.limits.stdin_write_timeout):
                await self._stdin.drain()
        except TimeoutError:
            raise StdinStalled(
                f"{self.name} did not read its input for {self.limits.stdin_write_timeout:g} s"
            ) from None
        except (ConnectionError, RuntimeError) as exc:
            raise ServerGone(f"{self.name} closed its input ({type(exc).__name__})") from None

    def _write(self, body: bytes) -> None:
        """Queue one frame on the server's stdin. Each frame is written without an ``await`` in between,
        so frames from the client, configuration answers and notifications never interleave."""
        if self._stdin.is_closing():
            raise ServerGone(f"{self.name} has no open input")
        header = encode_header(len(body), self.limits.frame)
        if len(body) < _JOIN_BELOW:
            self._stdin.write(header + body)  # one system call
        else:
            self._stdin.write(header)  # no copy of a large body
            self._stdin.write(body)

    def _inspect_client_message(self, body: bytes) -> bytes:
        try:
            message = parse_message(body)
            kind = classify(message)
        except MalformedMessage:
            return body  # not ours to judge: the server answers it
        method = message.get("method")
        if kind is MessageKind.REQUEST and method == "initialize":
            self._initialize_id = message["id"]
            params = message.get("params")
            self._client_initialize = params if isinstance(params, dict) else None
            return self._rewrite_initialize(message) or body
        if kind is MessageKind.NOTIFICATION and method == "initialized":
            self._inspect_client = False
            self._client_initialized = True
        return body

    def _note_lifecycle(self, body: bytes) -> None:
        try:
            message = parse_message(body)
            kind = classify(message)
        except MalformedMessage:
            return
        method = message.get("method")
        if kind is MessageKind.REQUEST and method == "shutdown":
            self._shutdown_requested = True
        elif kind is MessageKind.NOTIFICATION and method == "exit":
            self._exit_sent = True

    @property
    def exit_sent(self) -> bool:
        """``exit`` was sent to the server (by the client, or by :meth:`stop`): its exit status is then its
        answer to ``exit`` (LSP: 0 after ``shutdown``, 1 without), not its reaction to a closed stdin."""
        return self._exit_sent

    @property
    def exit_requested(self) -> bool:
        """The client sent ``shutdown`` and then ``exit``: a server exit is then expected, not a failure."""
        return self._shutdown_requested and self._exit_sent

    def _rewrite_initialize(self, message: dict[str, Any]) -> bytes | None:
        params = message.get("params")
        if not isinstance(params, dict):
            return None
        changed = False
        if params.get("initializationOptions") is None:
            options = self._plugins.initialization_options(self.language, self._settings)
            if options is not None:
                params["initializationOptions"] = options
                changed = True
        capabilities = params.get("capabilities")
        if isinstance(capabilities, dict):
            advertised = capabilities.get("workspace")
            self._client_configuration = (
                isinstance(advertised, dict) and advertised.get("configuration") is True
            )
            workspace = capabilities.setdefault("workspace", {})
            if isinstance(workspace, dict) and "configuration" not in workspace:
                # The session answers workspace/configuration itself, whatever the client supports.
                workspace["configuration"] = True
                changed = True
        return dump_message(message) if changed else None

    # Server -> client ----------------------------------------------------------------------------------
    # One task (the reader) always drains the server's stdout, whatever any client does (K15.11): it
    # answers what the session answers itself, then queues every other message for each attachment
    # (bounded, never waiting), or, while nothing is attached, hands it to a headless
    # :class:`~kandev_lsp.lsp.Endpoint` whose router answers the server's requests with its defaults and
    # tracks progress, registrations and diagnostics. The reader starts with the first attachment (or
    # :meth:`start_reading`), so a server's first messages always reach the first client.
    def messages(self) -> AsyncGenerator[bytes, None]:
        """Attach and return the attachment's messages (see :meth:`Attachment.messages`); closing the
        generator detaches. The one-client path of ``serve`` and ``run``."""
        return self.attach().messages()

    def attach(self, name: str = "") -> Attachment:
        """A new consumer of the server's output, from now on. The server keeps running when it leaves."""
        if self._closed:
            raise SessionError(f"{self.name} is closed")
        self._attached_count += 1
        attachment = Attachment(
            self, self.limits.attachment_queue_bytes, name or f"client{self._attached_count}"
        )
        if self._output_end is not None:
            attachment._finish(self._output_end)
            return attachment
        self._attachments.append(attachment)
        self.start_reading()
        return attachment

    def detach(self, attachment: Attachment) -> None:
        """Stop feeding ``attachment`` (its generator ends); the server keeps running. Idempotent."""
        attachment._finish(_END)
        if attachment in self._attachments:
            self._attachments.remove(attachment)
            self._client_left(attachment)
            if not self._attachments:
                self._settle_forwarded()

    @property
    def attachments(self) -> int:
        """How many consumers are attached."""
        return len(self._attachments)

    def start_reading(self) -> None:
        """Start the reader if it is not running (a headless owner calls it; :meth:`attach` does)."""
        if self._reader is None and not self._closed:
            self._reader = asyncio.get_running_loop().create_task(self._read_output())

    async def _read_output(self) -> None:
        # read_frames' loop, inlined: the reader must know when the messages of one read are all
        # dispatched (the attachments' held writes then go out, see Attachment.write_directly).
        decoder = FrameDecoder(self.limits.frame, peer=f"{self.name} stdout")
        read, chunk, dispatch = self._stdout.read, self.limits.read_chunk, self._dispatch
        end: BaseException = _END
        try:
            while True:
                data = await read(chunk)
                if data:
                    decoder.receive_data(data)
                else:
                    decoder.receive_eof()
                try:
                    while (body := decoder.next_frame()) is not NEED_DATA:
                        dispatch(body)
                finally:
                    if self._holding:
                        self._flush_holding()
                if not data:
                    break
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # framing errors reach every attachment; anything else is a bug, logged
            if not isinstance(exc, ProtocolError):
                log.exception("event=reader_failed session=%s", self.name)
            end = exc
        finally:
            self._output_end = end
            for attachment in self._attachments:
                attachment._finish(end)
            self._attachments.clear()
            self._server_requests.clear()  # nothing can be answered any more
            if self._shutdown_answer is not None and not self._shutdown_answer.done():
                self._shutdown_answer.set_result(None)
            if self._headless is not None:
                self._headless.connection_lost()
            self.close_stdin()  # nothing can be answered any more

    def _flush_holding(self) -> None:
        holding, self._holding = self._holding, []
        for attachment in holding:
            attachment._flush_held()

    def _dispatch(self, body: bytes) -> None:
        """One server message: the session's own answers first, then the attachments or the headless
        endpoint. Never waits."""
        if self._initialize_id is not None:
            self._note_initialize_result(body)
        small = len(body) <= _INSPECT_LIMIT
        if small and _CONFIGURATION in body:
            handled = self._answer_configuration(body)
            if handled is None:
                return  # answered here
            if handled is not body:
                small = False  # forwarded under an id of ours: settled by its own table, not tracked
            body = handled  # forwarded to the client (under an id of ours), or not ours
        attachments = self._attachments
        if len(attachments) == 1:  # the plain serve/run path: no copy of the list
            attachment = attachments[0]
            if attachment._put(body):
                if small and _may_be_request(body):
                    self._track(body, attachments)
                return
            attachments.clear()  # it fell behind and was dropped; this message goes headless
            self._client_left(attachment)
        elif attachments:
            reached = []
            for attachment in tuple(attachments):
                if attachment._put(body):
                    reached.append(attachment)
                else:
                    attachments.remove(attachment)
                    self._client_left(attachment)
            if attachments:
                if small and _may_be_request(body):
                    self._track(body, reached)
                return
        if not attachments:
            self._settle_forwarded()
            self._answer_headless(body)

    def headless_endpoint(self) -> Endpoint:
        """The endpoint that answers the server while nothing is attached, and the protocol state it
        tracked meanwhile (progress, registrations, diagnostics)."""
        if self._headless is None:
            from kandev_lsp.lsp import Endpoint

            # String ids of its own: a late answer to a detached client's integer id can never be
            # taken for the answer to the session's own ``shutdown``.
            endpoint = Endpoint(
                configuration=lambda params: self._answerer.answer(self._settings, params),
                id_prefix="kandev-lsp:",
            )
            endpoint.set_handler("workspace/workspaceFolders", self._workspace_folders)
            self._headless = endpoint
        return self._headless

    def _workspace_folders(self, _params: Any) -> Any:
        folders = (self._client_initialize or {}).get("workspaceFolders")
        return folders if isinstance(folders, list) else None

    def _answer_headless(self, body: bytes) -> None:
        from kandev_lsp.lsp import ResponseReceived

        endpoint = self.headless_endpoint()
        events = endpoint.receive(body, asyncio.get_running_loop().time())
        with contextlib.suppress(ServerGone):
            for data in endpoint.data_to_send():
                self._write(data)
        if self._shutdown_answer is not None:
            for event in events:
                if (
                    isinstance(event, ResponseReceived)
                    and event.request.id == self._shutdown_id
                    and not self._shutdown_answer.done()
                ):
                    self._shutdown_answer.set_result(None)

    # Server requests the clients leave unanswered -----------------------------------------------------
    # A request forwarded to a client that detaches (or is dropped as too slow) before answering it would
    # never be answered: gopls stalls on an unanswered ``window/workDoneProgress/create`` (FACTS), and
    # a reload right after ``client/registerCapability`` is common. So while clients are attached, the
    # ids of the server's requests they were given are tracked (small bodies that look like requests by
    # a byte check, parsed only then), dropped when a client's answer passes through :meth:`send`, and
    # when the last attachment a request reached leaves, the headless endpoint answers it as if nobody
    # had been attached: ``create`` -> null (token tracked), ``registerCapability`` applied and answered,
    # unknown -> -32601 ... (K15.9, K6.2). ``workspace/configuration`` has its own table
    # (:meth:`_settle_forwarded`).
    @property
    def unanswered_server_requests(self) -> int:
        """Server requests forwarded to clients that no client has answered yet."""
        return len(self._server_requests)

    def _track(self, body: bytes, reached: list[Attachment]) -> None:
        """Remember ``body`` if it is a server request (``reached`` are the attachments it was queued for)."""
        try:
            message = parse_message(body)
            if classify(message) is not MessageKind.REQUEST:
                return
        except MalformedMessage:
            return  # the client gets it as it is; nothing a default could answer
        requests = self._server_requests
        request_id: RequestId = message["id"]
        requests.pop(request_id, None)  # an id the server reuses is its newest request
        self._answered_for_clients.pop(request_id, None)
        requests[request_id] = _ServerRequest(body, list(reached))
        if len(requests) > _TRACK_MAX:
            oldest = next(iter(requests))
            answered = self._answered_for_clients
            answered[oldest] = None
            if len(answered) > _TRACK_MAX:
                del answered[next(iter(answered))]
            log_event(
                log, "server_request_unanswered", logging.WARNING, session=self.name, tracked=_TRACK_MAX
            )
            self._answer_by_default([requests.pop(oldest)])

    def _take_client_answer(self, body: bytes) -> bool:
        """Note a client's answer to a server request: True when the session already answered that request
        itself (the late answer is then dropped), False when it goes to the server."""
        try:
            message = parse_message(body)
            if classify(message) is not MessageKind.RESPONSE:
                return False
        except MalformedMessage:
            return False
        request_id = message["id"]
        if request_id is None:
            return False
        if self._server_requests.pop(request_id, None) is not None:
            return False  # answered in time: it goes to the server, and nothing else will answer it
        if request_id in self._answered_for_clients:
            del self._answered_for_clients[request_id]
            return True
        return False

    def _client_left(self, attachment: Attachment) -> None:
        """``attachment`` left: answer by default every server request no remaining attachment received."""
        if not self._attachments:
            self._answered_for_clients.clear()  # no client is left to answer late
        if not self._server_requests:
            return
        settled: list[_ServerRequest] = []
        for request_id, request in tuple(self._server_requests.items()):
            if attachment in request.waiting:
                request.waiting.remove(attachment)
                if not request.waiting:
                    settled.append(self._server_requests.pop(request_id))
        if settled:
            log_event(
                log, "server_requests_answered", session=self.name, client=attachment.name, count=len(settled)
            )
            self._answer_by_default(settled)

    def _answer_by_default(self, requests: list[_ServerRequest]) -> None:
        for request in requests:
            self._answer_headless(request.body)

    def _settle_forwarded(self) -> None:
        """Nobody is attached to answer forwarded configuration requests: the server gets ours now."""
        while self._forwarded:
            _, forwarded = self._forwarded.popitem()
            forwarded.timer.cancel()
            with contextlib.suppress(ServerGone):
                self._write(dump_message(response(forwarded.server_id, forwarded.ours)))

    def _note_initialize_result(self, body: bytes) -> None:
        try:
            message = parse_message(body)
            if classify(message) is not MessageKind.RESPONSE or message.get("id") != self._initialize_id:
                return
        except MalformedMessage:
            return
        self._initialize_id = None
        result = message.get("result")
        capabilities = result.get("capabilities") if isinstance(result, dict) else None
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        log_event(
            log,
            "initialized",
            server=self.name,
            suppress=",".join(sorted(self.suppressed_providers)) or "-",
        )

    @property
    def suppressed_providers(self) -> frozenset[str]:
        """The client's built-in providers this live server makes redundant (``hover``, ``completion``,
        ...), from the plugins' suppression hook and the capabilities the server advertised. Empty until
        the server has answered ``initialize``."""
        if self.server_capabilities is None:
            return frozenset()
        return self._plugins.suppressed_providers(self.language, self.server_capabilities)

    def _answer_configuration(self, body: bytes) -> bytes | None:
        """Handle a server message that may be a ``workspace/configuration`` request: None when it was
        answered here; otherwise the body to pass to the client (the request under an id of ours when
        it is forwarded for the client's settings, the message unchanged when it is not such a request)."""
        try:
            message = parse_message(body)
            if classify(message) is not MessageKind.REQUEST or message["method"] != "workspace/configuration":
                return body
        except MalformedMessage:
            return body
        if self._settings_file is not None:
            self.refresh_settings()
        answer = self._answerer.answer(self._settings, message.get("params"))
        self.configuration_requests += 1
        if self._ask_client_configuration and self._client_configuration and self._attachments:
            return self._forward_configuration(message, answer)
        with contextlib.suppress(ServerGone):
            self._write(dump_message(response(message["id"], answer)))
        return None

    def _forward_configuration(self, message: dict[str, Any], ours: list[Any]) -> bytes:
        self._forwarded_count += 1
        ours_id = f"{_FORWARDED_PREFIX}{self._forwarded_count}"
        timer = asyncio.get_running_loop().call_later(
            self.limits.client_configuration_timeout, self._client_configuration_late, ours_id
        )
        self._forwarded[ours_id] = _ForwardedConfiguration(message["id"], ours, timer)
        return dump_message({**message, "id": ours_id})

    def _take_client_configuration(self, body: bytes) -> bool:
        """Answer the server with the client's result merged over ours, if ``body`` is the client's
        answer to a forwarded request; False when it is not (it then goes to the server as it is)."""
        try:
            message = parse_message(body)
            if classify(message) is not MessageKind.RESPONSE:
                return False
        except MalformedMessage:
            return False
        forwarded = self._forwarded.pop(str(message.get("id")), None)
        if forwarded is None:
            return False
        forwarded.timer.cancel()
        client = message.get("result") if "error" not in message else None
        merged = merge_configuration_answers(forwarded.ours, client)
        self._write(dump_message(response(forwarded.server_id, merged)))
        return True

    def _client_configuration_late(self, ours_id: str) -> None:
        forwarded = self._forwarded.pop(ours_id, None)
        if forwarded is None:
            return
        log_event(log, "client_configuration_late", logging.WARNING, session=self.name)
        with contextlib.suppress(ServerGone):
            self._write(dump_message(response(forwarded.server_id, forwarded.ours)))

    # Lifetime -------------------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        """Wait for the server process to exit; its exit status."""
        return await self.process.wait()

    def close_stdin(self) -> None:
        """Close the server's stdin (most servers exit on end of input)."""
        if not self._stdin.is_closing():
            self._stdin.close()

    async def stop(self) -> int | None:
        """Graceful stop: detach everyone, ``shutdown`` (answer awaited up to ``limits.shutdown_timeout``),
        ``exit``, then :meth:`aclose` (wait ``exit_grace``, stop the tree). A server that was never
        initialized, or was already told to exit, goes straight to :meth:`aclose`."""
        from kandev_lsp.lsp import RequestRefused

        for attachment in tuple(self._attachments):
            self.detach(attachment)
        initialized = self.server_capabilities is not None
        if not self._closed and initialized and not self._exit_sent and self.process.returncode is None:
            self.start_reading()
            endpoint = self.headless_endpoint()
            loop = asyncio.get_running_loop()
            try:
                self._shutdown_answer = loop.create_future()
                request = endpoint.send_request("shutdown", now=loop.time(), timeout=None)
                self._shutdown_id = request.id
                for data in endpoint.data_to_send():
                    self._write(data)
                self._shutdown_requested = True
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.limits.shutdown_timeout):
                        await self._shutdown_answer
                endpoint.send_notification("exit")
                for data in endpoint.data_to_send():
                    self._write(data)
                self._exit_sent = True
            except (ServerGone, RequestRefused):
                pass
        return await self.aclose()

    async def aclose(self, *, exit_grace: float | None = None) -> int | None:
        """Close stdin, give the server ``exit_grace`` seconds to exit, then stop its whole tree.

        Returns the server's exit status when it exited by itself (before or during the grace), None
        when it had to be stopped; :attr:`exit_status` keeps the answer. Idempotent.
        """
        if self._closed:
            return self.exit_status
        self._closed = True
        for forwarded in self._forwarded.values():
            forwarded.timer.cancel()
        self._forwarded.clear()
        self._server_requests.clear()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        self.close_stdin()
        grace = self.limits.exit_grace if exit_grace is None else exit_grace
        if self.process.returncode is None and grace > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await self.process.wait()
        self.exit_status = self.process.returncode
        await self.process.stop(self.limits.stop_grace)
        for attachment in self._attachments:
            attachment._finish(_END)
        self._attachments.clear()
        if self._reader is not None and not self._reader.done():
            # Its pipe may stay open in a leftover grandchild; the drain after an exit is the bridge's job
            # (exit_drain_timeout), done by now.
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        return self.exit_status
