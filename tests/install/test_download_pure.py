"""Pure parts of the downloader: digest formats, URL layout and redaction, progress throttling."""

from __future__ import annotations

import pytest
from kandev_lsp.install.digests import normalize_sha256, parse_published_digest
from kandev_lsp.install.download import DownloadTimeouts, ProgressThrottle, redact_url, release_asset_url

HEX = "ab" * 32
OTHER = "cd" * 32
NAME = "rust-analyzer-x86_64-unknown-linux-gnu.gz"


# --------------------------------------------------------------------------------------------------
# digests


@pytest.mark.parametrize("value", [HEX, HEX.upper(), f"  {HEX}\n", f"sha256:{HEX}", f"SHA256:{HEX.upper()}"])
def test_pinned_digest_forms_are_normalised(value: str) -> None:
    assert normalize_sha256(value) == HEX


@pytest.mark.parametrize("value", ["", HEX[:-1], HEX + "0", "g" * 64, f"md5:{HEX}", f"{HEX} {NAME}"])
def test_invalid_pinned_digest_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="not a SHA-256 digest"):
        normalize_sha256(value)


@pytest.mark.parametrize(
    "text",
    [
        HEX,
        f"{HEX}\n",
        f"{HEX}\r\n",
        f"{HEX}  {NAME}\n",
        f"{HEX} *{NAME}\n",
        f"{HEX}\t{NAME}",
        f"{HEX}  ./target/release/{NAME}\n",
        f"{HEX}  some-build-name.gz\n",  # one entry: it is the digest of the file it sits beside
        f"SHA256 ({NAME}) = {HEX}\n",
        f"SHA2-256({NAME})= {HEX}\n",
        f"# generated\n\n{OTHER}  other.gz\n{HEX}  {NAME}\n{OTHER}  third.gz\n",
        f"{HEX}  {NAME}\n{HEX}  dist/{NAME}\n",  # the same digest twice is not a conflict
    ],
)
def test_published_digest_formats(text: str) -> None:
    assert parse_published_digest(text, NAME) == HEX


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "holds no digest"),
        ("# nothing here\n\n", "holds no digest"),
        ("<html>not found</html>", "line 1 is not a SHA-256 digest line"),
        (f"{HEX[:40]}  {NAME}", "line 1"),
        (f"{OTHER}  a.gz\n{HEX}  b.gz\n", "lists 2 digests and none of them is for"),
        (f"{OTHER}  {NAME}\n{HEX}  x/{NAME}\n", "different digests"),
        (f"{HEX}  {NAME}\nSHA1 ({NAME}) = {'0' * 40}\n", "line 2"),
    ],
)
def test_published_digest_without_a_usable_entry(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_published_digest(text, NAME)


# --------------------------------------------------------------------------------------------------
# URLs


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://example.test/releases/download", "https://example.test/releases/download/v1.0/tool.gz"),
        ("https://example.test/releases/download/", "https://example.test/releases/download/v1.0/tool.gz"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1.0/tool.gz"),
    ],
)
def test_release_asset_url_layout(base: str, expected: str) -> None:
    assert release_asset_url(base, "v1.0", "tool.gz") == expected


def test_release_asset_url_escapes_segments() -> None:
    # A version or name can never add path segments or a query.
    url = release_asset_url("https://example.test/r", "1.0/../../x", "a?b#c d.gz")
    assert url == "https://example.test/r/1.0%2F..%2F..%2Fx/a%3Fb%23c%20d.gz"


@pytest.mark.parametrize(
    "base",
    [
        "ftp://example.test/r",
        "example.test/r",
        "https:///r",
        "https://e.test/r?token=1",
        "https://e.test/r#x",
    ],
)
def test_release_asset_url_refuses_unusable_bases(base: str) -> None:
    with pytest.raises(ValueError, match="base URL"):
        release_asset_url(base, "v1", "tool.gz")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:pw@example.test/a/b.gz?sig=XYZ&t=1#frag", "https://example.test/a/b.gz"),
        ("https://token@example.test:8443/a", "https://example.test:8443/a"),
        ("http://[::1]:8080/x?k=v", "http://[::1]:8080/x"),
        ("http://127.0.0.1:1/plain", "http://127.0.0.1:1/plain"),
        ("http://example.test:notaport/x", "<unparsable URL>"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


# --------------------------------------------------------------------------------------------------
# Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_throttle_reports_start_every_64_kib_and_the_end() -> None:
    calls: list[tuple[int, int | None]] = []
    clock = FakeClock()
    throttle = ProgressThrottle(lambda d, t: calls.append((d, t)), 1_000_000, clock=clock)

    for done in range(1000, 1_000_001, 1000):  # 1000 tiny chunks, no time passing
        throttle.update(done)
    throttle.finish(1_000_000)

    assert calls[0] == (0, 1_000_000)
    assert calls[-1] == (1_000_000, 1_000_000)
    # one report per full 64 KiB (65 536 bytes, i.e. every 66th chunk of 1000), plus first and last
    assert [d for d, _ in calls[1:-1]] == [66_000 * k for k in range(1, 16)]


def test_throttle_reports_a_slow_trickle_every_100_ms() -> None:
    calls: list[int] = []
    clock = FakeClock()
    throttle = ProgressThrottle(lambda d, t: calls.append(d), None, clock=clock)

    for done in range(1, 101):  # one byte every 25 ms
        clock.now += 0.025
        throttle.update(done)

    assert calls[0] == 0
    assert calls[1:] == [4 * k for k in range(1, 26)]


def test_throttle_never_goes_backwards_or_repeats_the_final_value() -> None:
    calls: list[int] = []
    clock = FakeClock()
    throttle = ProgressThrottle(lambda d, t: calls.append(d), 10, clock=clock)
    clock.now += 1
    throttle.update(10)
    throttle.update(5)
    throttle.finish(10)

    assert calls == [0, 10]


def test_throttle_without_callback_is_silent() -> None:
    throttle = ProgressThrottle(None, 10)
    throttle.update(5)
    throttle.finish(10)


@pytest.mark.parametrize("field", ["connect", "headers", "stalled_read"])
@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_timeouts_must_be_positive(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        DownloadTimeouts(**{field: value})


def test_default_timeouts_are_the_reference_values() -> None:
    timeouts = DownloadTimeouts()
    assert (timeouts.connect, timeouts.headers, timeouts.stalled_read) == (30.0, 60.0, 120.0)
    as_httpx = timeouts.for_httpx()
    assert as_httpx.connect == 30.0
    # httpx's per-read limit is only a backstop behind the phase-aware asyncio deadlines.
    assert as_httpx.read == 180.0
