"""Download one release asset: stream it, verify its SHA-256, and publish it atomically.

The asset is written (gzip-decompressed on the fly when the recipe says so) to a temporary file beside the
target and renamed into place only after the whole body arrived and its digest matched. Anything else —
an HTTP error, a timeout, a digest mismatch, an asyncio cancellation — removes the temporary file, so a
failed or cancelled download leaves nothing behind and never replaces a file that was already there.

Timeouts follow the reference system: connecting 30 s, waiting for response headers 60 s, 2 minutes per
stalled read and no overall limit (a slow but moving download of a large server is fine). httpx applies
the connect timeout; the other two are asyncio deadlines here, so an error can say which phase stalled.

Error messages show URLs without user info, query string or fragment (signed redirect URLs and mirror
tokens live there), and never request headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
from kandev_lsp.errors import KandevLspError
from kandev_lsp.install.digests import (
    MAX_DIGEST_FILE_BYTES,
    MAX_METADATA_BYTES,
    DigestPlan,
    normalize_sha256,
    parse_published_digest,
    parse_release_metadata,
    plan_digest,
)
from kandev_lsp.install.redaction import redact_url, scrub_urls
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

ProgressCallback = Callable[[int, int | None], None]
"""Called with ``(bytes_downloaded, total_bytes_or_None)``; the total is the server's Content-Length."""

DigestSource = Literal["pinned", "published", "metadata"]
TimeoutPhase = Literal["connect", "response headers", "body"]

#: Downloads (and gzip output) larger than this are refused: a guard against a hostile or broken mirror
#: filling the disk, far above any language server's size.
DEFAULT_MAX_BYTES = 2 * 1024**3

_SUPPORTED_COMPRESSIONS = ("gzip", "none", "zip", "tar.gz")

#: What to do when no digest can be had (every such error ends with it).
DIGEST_ADVICE = (
    "Get the asset's SHA-256 from a source you trust and pass it with `kandev-lsp install LANG --sha256 HEX`, "
    "or use a mirror (lsp_release_base_urls) that publishes <asset>.sha256 files beside its assets."
)
#: The media type asked of a release metadata endpoint (the GitHub API answers JSON either way).
METADATA_ACCEPT = "application/vnd.github+json, application/json"
# zlib output is produced in slices of this size so one small chunk of a "zip bomb" cannot allocate
# gigabytes at once.
_UNPACK_SLICE = 1024 * 1024
_GZIP_WBITS = 16 + zlib.MAX_WBITS


@dataclass(frozen=True, slots=True)
class DownloadTimeouts:
    """Per-phase limits in seconds. There is deliberately no overall limit.

    ``connect``: establishing the TCP/TLS connection (and waiting for a pooled one).
    ``headers``: from sending the request to receiving the response headers.
    ``stalled_read``: the longest wait for the next piece of the body.
    """

    connect: float = 30.0
    headers: float = 60.0
    stalled_read: float = 120.0

    def __post_init__(self) -> None:
        for name in ("connect", "headers", "stalled_read"):
            if not getattr(self, name) > 0:
                raise ValueError(f"DownloadTimeouts.{name} must be a positive number of seconds")

    def for_httpx(self) -> httpx.Timeout:
        """The httpx part. Connect and pool waits are httpx's; reads are bounded by the asyncio deadlines
        (which know the phase), with httpx's read timeout only as a later backstop per read."""
        return httpx.Timeout(
            connect=self.connect,
            read=self.headers + self.stalled_read,
            write=self.stalled_read,
            pool=self.connect,
        )


DEFAULT_TIMEOUTS = DownloadTimeouts()


@dataclass(frozen=True, slots=True)
class DownloadResult:
    """A verified asset now at ``path``.

    ``url`` is the redacted asset URL, ``sha256`` the digest of the downloaded bytes (before any gzip
    decompression), ``size`` the number of bytes downloaded and ``unpacked_size`` the size of ``path``.
    ``digest_source`` says whether the digest was pinned (by the plugin or the user), published in a
    ``.sha256`` file beside the asset, or read from the release metadata.
    """

    url: str
    sha256: str
    size: int
    unpacked_size: int
    path: Path
    digest_source: DigestSource


class DownloadError(KandevLspError):
    """A release asset could not be downloaded, verified or written. ``url`` is already redacted."""

    def __init__(self, message: str, *, url: str) -> None:
        self.url = url
        super().__init__(message)


class AssetNotFoundError(DownloadError):
    """The server answered 404 (or 410) for the asset: wrong version, wrong asset name, or wrong mirror."""


class HttpStatusError(DownloadError):
    """The server answered with an unexpected HTTP status."""

    def __init__(self, message: str, *, url: str, status: int) -> None:
        self.status = status
        super().__init__(message, url=url)


class DownloadTimeoutError(DownloadError):
    """One phase of the download took longer than its limit."""

    def __init__(self, message: str, *, url: str, phase: TimeoutPhase, seconds: float) -> None:
        self.phase = phase
        self.seconds = seconds
        super().__init__(message, url=url)


class DownloadConnectionError(DownloadError):
    """The connection could not be made or broke before the body was complete."""


class DigestUnavailableError(DownloadError):
    """No digest is pinned and none could be had from where the recipe says its origin publishes them."""


class DigestMismatch(DownloadError):
    """The downloaded bytes do not have the expected SHA-256; nothing was written."""

    def __init__(self, message: str, *, url: str, expected: str, got: str) -> None:
        self.expected = expected
        self.got = got
        super().__init__(message, url=url)


class CorruptAssetError(DownloadError):
    """The asset's digest matched but it is not what its compression says (not a valid gzip stream)."""


class AssetTooLargeError(DownloadError):
    """The download, or its decompressed content, exceeded the size limit."""


class UnsupportedAssetError(DownloadError):
    """The plugin declared an asset this downloader cannot handle (unknown compression, bad pin or URL)."""


# --------------------------------------------------------------------------------------------------
# Pure helpers


def release_asset_url(base_url: str, version: str, asset_name: str) -> str:
    """``<base_url>/<version>/<asset_name>``, with the version and name percent-encoded as path segments.

    Raises :class:`ValueError` for a base URL that is not plain http(s) or that carries a query string or
    fragment (the layout appends path segments, which a query would swallow).
    """
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base URL {redact_url(base_url)!r} must be an http:// or https:// URL")
    if parts.query or parts.fragment:
        raise ValueError(
            f"base URL {redact_url(base_url)!r} must not have a query string or fragment; "
            "pass mirror credentials through the HTTP client instead"
        )
    base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return f"{base}/{quote(version, safe='')}/{quote(asset_name, safe='')}"


def _check_http_url(url: str, what: str) -> None:
    """Refuse a URL that is not plain http(s) (a ``file:`` or ``ftp:`` origin is never fetched)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{what} {redact_url(url)!r} must be an http:// or https:// URL")


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or "the server"
    except ValueError:
        return "the server"


class ProgressThrottle:
    """Forwards progress to a callback at a sensible rate.

    A report is passed on when at least ``min_bytes`` arrived or ``min_interval`` seconds passed since the
    previous one, so tiny chunks do not flood the caller while a slow trickle still shows movement.
    :meth:`finish` always reports the final value. Values passed on never decrease.
    """

    def __init__(
        self,
        callback: ProgressCallback | None,
        total: int | None,
        *,
        min_bytes: int = 64 * 1024,
        min_interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._callback = callback
        self._total = total
        self._min_bytes = min_bytes
        self._min_interval = min_interval
        self._clock = clock
        self._last_bytes = 0
        self._last_time = clock()
        if callback is not None:
            callback(0, total)

    def update(self, done: int) -> None:
        if self._callback is None or done <= self._last_bytes:
            return
        now = self._clock()
        if done - self._last_bytes >= self._min_bytes or now - self._last_time >= self._min_interval:
            self._emit(done, now)

    def finish(self, done: int) -> None:
        if self._callback is not None and done > self._last_bytes:
            self._emit(done, self._clock())

    def _emit(self, done: int, now: float) -> None:
        assert self._callback is not None
        self._last_bytes = done
        self._last_time = now
        self._callback(done, self._total)


# --------------------------------------------------------------------------------------------------
# Writing the body


class _CopySink:
    """Writes the body as it comes (``none``, and archives that are extracted later)."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self.written = 0
        self.error: str | None = None
        self.too_large = False

    def feed(self, data: bytes) -> None:
        self._out.write(data)
        self.written += len(data)

    def finish(self) -> None:
        pass


class _GzipSink:
    """Decompresses a gzip stream into ``out`` as it arrives.

    A corrupt stream does not stop the download: the error is kept and the rest of the body is still
    hashed, so a damaged download is reported as a digest mismatch (the useful message) and only a
    correctly digested but invalid asset as :attr:`error`. Concatenated gzip members are accepted, as
    ``gunzip`` does.
    """

    def __init__(self, out: BinaryIO, limit: int) -> None:
        self._out = out
        self._limit = limit
        self._inflater = zlib.decompressobj(wbits=_GZIP_WBITS)
        self.written = 0
        self.error: str | None = None
        self.too_large = False

    def feed(self, data: bytes) -> None:
        if self.error is not None or self.too_large:
            return
        try:
            self._inflate(data)
        except zlib.error as exc:
            self.error = f"it is not a valid gzip stream ({exc})"

    def finish(self) -> None:
        if self.error is not None or self.too_large:
            return
        try:
            if not self._inflater.eof:
                self._write(self._inflater.flush())
        except zlib.error as exc:
            self.error = f"it is not a valid gzip stream ({exc})"
            return
        if not self._inflater.eof:
            self.error = "the gzip stream is truncated"

    def _inflate(self, data: bytes) -> None:
        pending = data
        while pending and not self.too_large:
            if self._inflater.eof:
                self._inflater = zlib.decompressobj(wbits=_GZIP_WBITS)
            self._write(self._inflater.decompress(pending, _UNPACK_SLICE))
            pending = self._inflater.unused_data if self._inflater.eof else self._inflater.unconsumed_tail

    def _write(self, data: bytes) -> None:
        if self.written + len(data) > self._limit:
            self.too_large = True
            return
        self._out.write(data)
        self.written += len(data)


# --------------------------------------------------------------------------------------------------
# HTTP


@contextlib.contextmanager
def _translated_errors(url: str, timeouts: DownloadTimeouts) -> Iterator[None]:
    """Turns httpx exceptions into :class:`DownloadError` subclasses with a redacted URL and a next step."""
    shown = redact_url(url)
    host = _host_of(url)
    try:
        yield
    except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise DownloadTimeoutError(
            f"timed out after {timeouts.connect:g} s connecting to {host} for {shown}. "
            "Check the network connection, any proxy settings, and that the mirror is reachable.",
            url=shown,
            phase="connect",
            seconds=timeouts.connect,
        ) from exc
    except httpx.TimeoutException as exc:
        raise DownloadTimeoutError(
            f"timed out talking to {host} for {shown} ({type(exc).__name__}). "
            "Check the network connection and the mirror, then try again.",
            url=shown,
            phase="body",
            seconds=timeouts.stalled_read,
        ) from exc
    except httpx.ConnectError as exc:
        raise DownloadConnectionError(
            f"could not connect to {host} for {shown}: {scrub_urls(str(exc)) or type(exc).__name__}. "
            "Check the network connection, any proxy settings, and the mirror URL.",
            url=shown,
        ) from exc
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise DownloadConnectionError(
            f"the connection to {host} broke while downloading {shown}: "
            f"{scrub_urls(str(exc)) or type(exc).__name__}. Try again; if it keeps failing, try another mirror.",
            url=shown,
        ) from exc
    except httpx.TooManyRedirects as exc:
        raise DownloadConnectionError(
            f"too many redirects while downloading {shown}. Check the mirror URL.", url=shown
        ) from exc
    except httpx.HTTPError as exc:
        raise DownloadError(
            f"downloading {shown} failed: {type(exc).__name__}: {scrub_urls(str(exc))}", url=shown
        ) from exc


async def _send(
    client: httpx.AsyncClient, url: str, timeouts: DownloadTimeouts, accept: str | None = None
) -> httpx.Response:
    """Sends a GET and waits for the response headers, at most ``timeouts.headers`` after the request.

    httpcore's ``trace`` extension reports when the wait for headers starts, so the deadline does not
    eat into the connect timeout (and restarts on each redirect hop). A transport that reports nothing
    (a mock) still gets a deadline: connect plus headers from the start.
    """
    loop = asyncio.get_running_loop()
    deadline = asyncio.timeout_at(loop.time() + timeouts.connect + timeouts.headers)
    redirect_body = False

    async def trace(event: str, info: dict[str, Any]) -> None:
        nonlocal redirect_body
        if event.endswith(".receive_response_headers.started"):
            redirect_body = False
            deadline.reschedule(loop.time() + timeouts.headers)
        elif event.endswith(".receive_response_headers.complete"):
            # Either send() returns now, or httpx reads a redirect's (short) body before the next hop.
            redirect_body = True
            deadline.reschedule(loop.time() + timeouts.stalled_read)
        elif event.endswith(".connect_tcp.started"):
            deadline.reschedule(None)  # httpx's connect timeout governs a new connection

    request = client.build_request(
        "GET",
        url,
        # The digest covers the file as published: no transparent compression by the server.
        headers={"Accept-Encoding": "identity", **({"Accept": accept} if accept else {})},
        timeout=timeouts.for_httpx(),
        extensions={"trace": trace},
    )
    try:
        async with deadline:
            return await client.send(request, stream=True, follow_redirects=True)
    except TimeoutError:
        if not deadline.expired():
            raise
        shown = redact_url(url)
        if redirect_body:
            raise DownloadTimeoutError(
                f"a redirect from {shown} stalled for {timeouts.stalled_read:g} s. Check the network "
                "connection, or try again later or another mirror.",
                url=shown,
                phase="body",
                seconds=timeouts.stalled_read,
            ) from None
        raise DownloadTimeoutError(
            f"{_host_of(url)} sent no response headers within {timeouts.headers:g} s for {shown}. "
            "The mirror may be overloaded or stuck; try again later or use another mirror.",
            url=shown,
            phase="response headers",
            seconds=timeouts.headers,
        ) from None


@contextlib.asynccontextmanager
async def _get(
    client: httpx.AsyncClient, url: str, timeouts: DownloadTimeouts, *, accept: str | None = None
) -> AsyncIterator[httpx.Response]:
    """An open streaming response; httpx errors inside the block become :class:`DownloadError`."""
    with _translated_errors(url, timeouts):
        response = await _send(client, url, timeouts, accept)
        try:
            yield response
        finally:
            await response.aclose()


async def _read_body(
    response: httpx.Response,
    url: str,
    timeouts: DownloadTimeouts,
    on_chunk: Callable[[bytes], None],
) -> int:
    """Streams the raw body to ``on_chunk``; each wait for data is limited to ``timeouts.stalled_read``.

    Returns the number of bytes received. Raw bytes (no content decoding) are what the digest covers.
    """
    loop = asyncio.get_running_loop()
    received = 0
    stall = asyncio.timeout(None)
    # A response built from in-memory bytes (httpx.MockTransport) arrives already read.
    chunks = _already_read(response.content) if response.is_stream_consumed else response.aiter_raw()
    try:
        async with stall, _closing(chunks):
            while True:
                stall.reschedule(loop.time() + timeouts.stalled_read)
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                stall.reschedule(None)
                received += len(chunk)
                on_chunk(chunk)
    except TimeoutError:
        if not stall.expired():
            raise
        shown = redact_url(url)
        raise DownloadTimeoutError(
            f"the download of {shown} stalled: no data for {timeouts.stalled_read:g} s after "
            f"{received} bytes. Check the network connection, or try again later or another mirror.",
            url=shown,
            phase="body",
            seconds=timeouts.stalled_read,
        ) from None
    return received


async def _already_read(content: bytes) -> AsyncIterator[bytes]:
    yield content


@contextlib.asynccontextmanager
async def _closing(iterator: AsyncIterator[bytes]) -> AsyncIterator[None]:
    """Closes an async generator left unfinished (an error in the loop body), instead of leaving it to
    the garbage collector and the event loop's finaliser."""
    try:
        yield
    finally:
        if isinstance(iterator, AsyncGenerator):
            await iterator.aclose()


def _content_length(response: httpx.Response) -> int | None:
    if response.headers.get("content-encoding", "identity").lower() != "identity":
        return None
    try:
        value = int(response.headers.get("content-length", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


def _check_status(response: httpx.Response, url: str, what: str, hint_404: str) -> None:
    status = response.status_code
    if status == 200:
        return
    shown = redact_url(url)
    final_host = _host_of(str(response.url))
    via = f" (after a redirect to {final_host})" if final_host != _host_of(url) else ""
    if status in (404, 410):
        raise AssetNotFoundError(
            f"{what} was not found at {shown}{via} (HTTP {status}). {hint_404}", url=shown
        )
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    raise HttpStatusError(
        f"downloading {what} from {shown}{via} failed with HTTP {status}{reason}. "
        "Check the mirror URL and any credentials it needs, or try again later.",
        url=shown,
        status=status,
    )


# --------------------------------------------------------------------------------------------------
# Public entry point


async def download_release_asset(
    recipe: ReleaseRecipe,
    asset: ReleaseAsset,
    dest_file: Path,
    *,
    base_url: str | None = None,
    metadata_url: str | None = None,
    timeouts: DownloadTimeouts = DEFAULT_TIMEOUTS,
    progress: ProgressCallback | None = None,
    client: httpx.AsyncClient | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DownloadResult:
    """Download ``asset`` of ``recipe`` to ``dest_file``, verified, atomically.

    The URL is ``<base_url or recipe.base_url>/<recipe.version>/<asset.name>``. The SHA-256 of the
    downloaded bytes must equal the digest :func:`~kandev_lsp.install.digests.plan_digest` names:
    ``asset.sha256``, or the asset's entry in the release metadata (``metadata_url``, a per-language
    override, else the recipe's), or ``<asset URL>.sha256``. It is fetched first, so a missing digest fails
    before a long download; with no source at all nothing is requested.

    What ``dest_file`` receives depends on ``asset.compression``: ``"gzip"`` -> the decompressed stream,
    mode 0o755; ``"none"`` -> the body, mode 0o755; ``"zip"`` / ``"tar.gz"`` -> the archive itself, mode
    0o644, for :func:`kandev_lsp.install.archives.extract_archive`. The parent folder is created if needed.

    ``client``: an :class:`httpx.AsyncClient` to use (connection reuse, proxies, mirror credentials,
    tests); it is left open. Without one, a client honouring the usual proxy environment variables is
    created and closed. Per-request timeouts from ``timeouts`` apply either way; redirects are followed.

    ``progress`` receives ``(bytes_downloaded, content_length_or_None)``: ``(0, total)`` first, then at
    most every 64 KiB or 100 ms, and the final count last.

    Raises a :class:`DownloadError` subclass on failure, after removing the temporary file; an existing
    ``dest_file`` is then left untouched. Cancellation propagates as :class:`asyncio.CancelledError`, also
    leaving nothing behind.
    """
    shown = "<invalid URL>"
    try:
        url = release_asset_url(base_url or recipe.base_url, recipe.version, asset.name)
        shown = redact_url(url)
        if asset.compression not in _SUPPORTED_COMPRESSIONS:
            raise ValueError(
                f"asset {asset.name!r} declares compression {asset.compression!r}; supported: "
                + ", ".join(_SUPPORTED_COMPRESSIONS)
            )
        digest = plan_digest(recipe, asset, base_url=base_url, metadata_url=metadata_url)
        if digest.kind == "pinned":
            assert digest.value is not None
            digest = DigestPlan("pinned", value=normalize_sha256(digest.value))
        elif digest.kind == "metadata":
            assert digest.url is not None
            _check_http_url(digest.url, "release metadata URL")
    except ValueError as exc:
        raise UnsupportedAssetError(
            f"cannot download release asset {asset.name!r}: {exc}. This is a problem in the plugin's "
            "release recipe or in the configured base URL.",
            url=shown,
        ) from None

    if client is None:
        async with httpx.AsyncClient(timeout=timeouts.for_httpx(), follow_redirects=True) as own_client:
            return await _download(
                own_client, url, recipe, asset, digest, dest_file, timeouts, progress, max_bytes
            )
    return await _download(client, url, recipe, asset, digest, dest_file, timeouts, progress, max_bytes)


async def _download(
    client: httpx.AsyncClient,
    url: str,
    recipe: ReleaseRecipe,
    asset: ReleaseAsset,
    digest: DigestPlan,
    dest_file: Path,
    timeouts: DownloadTimeouts,
    progress: ProgressCallback | None,
    max_bytes: int,
) -> DownloadResult:
    shown = redact_url(url)
    source: DigestSource
    if digest.kind == "pinned":
        assert digest.value is not None
        expected, source = digest.value, "pinned"
    elif digest.kind == "metadata":
        assert digest.url is not None
        expected = await _metadata_digest(client, digest.url, asset.name, timeouts)
        source = "metadata"
    elif digest.kind == "file":
        expected, source = await _published_digest(client, url, asset.name, timeouts), "published"
    else:
        raise DigestUnavailableError(
            f"no SHA-256 digest is pinned for {asset.name!r} and its release origin publishes none, so it "
            f"cannot be verified. {DIGEST_ADVICE}",
            url=shown,
        )

    hasher = hashlib.sha256()
    async with _get(client, url, timeouts) as response:
        _check_status(
            response,
            url,
            f"release asset {asset.name!r} (version {recipe.version})",
            f"Check that version {recipe.version} exists and publishes {asset.name!r}, and that the "
            "mirror (base URL) is right and complete.",
        )
        total = _content_length(response)
        if total is not None and total > max_bytes:
            raise _too_large(shown, max_bytes)
        # The temporary file exists only from here on: an HTTP error never touches the folder.
        with _temp_file_beside(dest_file) as (temp, out):
            sink = _GzipSink(out, max_bytes) if asset.compression == "gzip" else _CopySink(out)
            throttle = ProgressThrottle(progress, total)
            received = 0

            def on_chunk(chunk: bytes) -> None:
                nonlocal received
                received += len(chunk)
                if received > max_bytes:
                    raise _too_large(shown, max_bytes)
                hasher.update(chunk)
                sink.feed(chunk)
                throttle.update(received)

            await _read_body(response, url, timeouts, on_chunk)
            sink.finish()
            got = hasher.hexdigest()
            _verify(shown, received, total, expected, got, source, sink, max_bytes)
            throttle.finish(received)
            out.flush()
            # Durable before visible: after a crash the target is either absent or complete.
            os.fsync(out.fileno())
            out.close()
            os.chmod(temp, 0o644 if asset.compression in ("zip", "tar.gz") else 0o755)
            os.replace(temp, dest_file)
    return DownloadResult(
        url=shown,
        sha256=got,
        size=received,
        unpacked_size=sink.written,
        path=dest_file,
        digest_source=source,
    )


@contextlib.contextmanager
def _temp_file_beside(dest_file: Path) -> Iterator[tuple[Path, BinaryIO]]:
    """A new hidden file in ``dest_file``'s folder (same filesystem, so the final rename is atomic).

    It is removed on the way out unless it was renamed away, whatever ends the block: an error, a
    cancellation, or success after ``os.replace``.
    """
    dest_file.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dest_file.name}.", suffix=".part", dir=dest_file.parent)
    temp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            yield temp, out
    finally:
        temp.unlink(missing_ok=True)


def _verify(
    shown: str,
    received: int,
    total: int | None,
    expected: str,
    got: str,
    source: DigestSource,
    sink: _CopySink | _GzipSink,
    max_bytes: int,
) -> None:
    """The checks between "the body arrived" and "publish it", most useful failure first."""
    if total is not None and received != total:
        raise DownloadConnectionError(
            f"the download of {shown} ended after {received} of {total} bytes. Try again; if it keeps "
            "failing, try another mirror.",
            url=shown,
        )
    if got != expected:
        raise DigestMismatch(
            f"SHA-256 mismatch for {shown}: expected {expected} ({source}), got {got}. Nothing was "
            "installed. The download may be corrupt or the mirror may serve a different file; try again, "
            "and check the mirror and the pinned digest.",
            url=shown,
            expected=expected,
            got=got,
        )
    if sink.too_large:
        raise _too_large(shown, max_bytes, unpacked=True)
    if sink.error is not None:
        raise CorruptAssetError(
            f"release asset {shown} matched its SHA-256 but {sink.error}. The published asset itself is "
            "broken or its declared compression is wrong; report it to the plugin's authors.",
            url=shown,
        )


@contextlib.contextmanager
def _digest_unavailable(asset_name: str, source: str, shown: str) -> Iterator[None]:
    """A digest source that cannot be fetched, whatever the way (refused connection, timeout, HTTP
    status, a cut body), is a :class:`DigestUnavailableError` that says what to do (``--sha256``)."""
    try:
        yield
    except DigestUnavailableError:
        raise
    except DownloadError as exc:
        raise DigestUnavailableError(
            f"no SHA-256 digest is pinned for {asset_name!r} and {source} could not be fetched: "
            f"{str(exc).rstrip()} {DIGEST_ADVICE}",
            url=shown,
        ) from None


async def _published_digest(
    client: httpx.AsyncClient, asset_url: str, asset_name: str, timeouts: DownloadTimeouts
) -> str:
    """The digest the mirror publishes at ``<asset_url>.sha256``."""
    digest_url = f"{asset_url}.sha256"
    shown = redact_url(digest_url)
    advice = DIGEST_ADVICE
    body = bytearray()

    def collect(chunk: bytes) -> None:
        body.extend(chunk)
        if len(body) > MAX_DIGEST_FILE_BYTES:
            raise DigestUnavailableError(
                f"{shown} is larger than {MAX_DIGEST_FILE_BYTES} bytes, so it is not a digest file. {advice}",
                url=shown,
            )

    with _digest_unavailable(asset_name, "none", shown):
        async with _get(client, digest_url, timeouts) as response:
            _check_status(response, digest_url, f"the SHA-256 digest of {asset_name!r}", "")
            await _read_body(response, digest_url, timeouts, collect)
    try:
        return parse_published_digest(body.decode("utf-8", errors="replace"), asset_name)
    except ValueError as exc:
        raise DigestUnavailableError(
            f"no SHA-256 digest is pinned for {asset_name!r} and {shown} holds no usable digest: {exc}. "
            + advice,
            url=shown,
        ) from None


async def _metadata_digest(
    client: httpx.AsyncClient, metadata_url: str, asset_name: str, timeouts: DownloadTimeouts
) -> str:
    """The digest the release origin lists for ``asset_name`` in its release metadata (JSON)."""
    shown = redact_url(metadata_url)
    body = bytearray()

    def collect(chunk: bytes) -> None:
        body.extend(chunk)
        if len(body) > MAX_METADATA_BYTES:
            raise DigestUnavailableError(
                f"the release metadata at {shown} is larger than {MAX_METADATA_BYTES} bytes; refusing it. "
                + DIGEST_ADVICE,
                url=shown,
            )

    with _digest_unavailable(asset_name, "the release metadata", shown):
        async with _get(client, metadata_url, timeouts, accept=METADATA_ACCEPT) as response:
            _check_status(response, metadata_url, f"the release metadata listing {asset_name!r}", "")
            await _read_body(response, metadata_url, timeouts, collect)
    try:
        return parse_release_metadata(body.decode("utf-8", errors="replace"), asset_name)
    except ValueError as exc:
        raise DigestUnavailableError(
            f"no SHA-256 digest is pinned for {asset_name!r} and the release metadata at {shown} gives "
            f"none: {exc}. {DIGEST_ADVICE}",
            url=shown,
        ) from None


def _too_large(shown: str, limit: int, *, unpacked: bool = False) -> AssetTooLargeError:
    what = "decompresses to" if unpacked else "is"
    return AssetTooLargeError(
        f"release asset {shown} {what} more than {limit} bytes, the download limit; refusing it. "
        "Check the mirror serves the right file.",
        url=shown,
    )
