"""Release installs through a real HTTP server on 127.0.0.1 (the ``release_server`` fixture)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import io
import os
import random
import subprocess
import sys
import zipfile
from typing import Any

import pytest
from kandev_lsp import ReleaseAsset
from kandev_lsp.install import (
    InstallError,
    InstallManager,
    InstallProgress,
    NoInstallerError,
    VerificationError,
)
from kandev_lsp.install.cache import ServerCache
from kandev_lsp.platform import HostPlatform
from kandev_lsp.resolver import Resolver


def install(world: Any, host: Any, **kw: Any) -> tuple[Any, list[InstallProgress]]:
    reports: list[InstallProgress] = []
    manager_options = kw.pop("manager", {})

    async def run() -> Any:
        async with InstallManager(host, **manager_options) as manager:
            return await manager.install("fakerel", world.task(), progress=reports.append, **kw)

    return asyncio.run(run()), reports


def padded_script(version_line: str, *, exit_code: int = 0, padding: int = 0) -> bytes:
    filler = base64.b64encode(random.Random(1).randbytes(padding)).decode() if padding else ""
    return (
        f"#!{sys.executable}\nimport sys\n# {filler}\nprint({version_line!r})\nsys.exit({exit_code})\n"
    ).encode()


def test_a_release_is_downloaded_verified_and_made_current(world: Any, kit: Any, release_server: Any) -> None:
    data = gzip.compress(padded_script("fakerel 1.0.0", padding=600_000))
    digest = hashlib.sha256(data).hexdigest()
    release_server.publish("1.0.0", "fakerel.gz", data)
    host = kit.plugin_host(
        kit.release_spec(release_server.url, asset=ReleaseAsset("fakerel.gz", sha256=digest))
    )
    receipt, reports = install(world, host)
    phases = [report.phase for report in reports]
    assert phases[0] == "waiting_for_lock" and phases[-3:] == ["verifying", "switching", "done"]
    downloads = [
        report for report in reports if report.phase == "downloading" and report.bytes_done is not None
    ]
    assert downloads[-1].bytes_done == downloads[-1].bytes_total == len(data)
    assert (receipt.recipe, receipt.version, receipt.sha256) == ("release", "1.0.0", digest)
    assert receipt.source == f"{release_server.url}/1.0.0/fakerel.gz"
    resolution = Resolver(host).resolve("fakerel", world.task())
    assert resolution.found and resolution.source == "managed cache"
    assert resolution.executable == str(world.cache / "fakerel" / "current" / "bin" / "fakerel")
    ran = subprocess.run([resolution.executable, "--version"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "fakerel 1.0.0"


def test_a_digest_published_beside_the_asset_is_used_when_none_is_pinned(
    world: Any, kit: Any, release_server: Any
) -> None:
    data, digest = kit.script_asset()
    release_server.publish("1.0.0", "fakerel.gz", data, sha256_text=f"{digest}  fakerel.gz\n")
    receipt, _ = install(world, kit.plugin_host(kit.release_spec(release_server.url)))
    assert receipt.sha256 == digest


def test_a_digest_given_by_the_user_verifies_an_asset_nothing_else_vouches_for(
    world: Any, kit: Any, release_server: Any
) -> None:
    data, digest = kit.script_asset()
    release_server.publish("1.0.0", "fakerel.gz", data)  # no .sha256 beside it, none pinned
    host = kit.plugin_host(kit.release_spec(release_server.url))
    with pytest.raises(InstallError, match="digest"):
        install(world, host)
    with pytest.raises(InstallError, match="SHA-256"):
        install(world, host, sha256="f" * 64)
    assert ServerCache(world.cache, "fakerel").current_name() is None
    receipt, _ = install(world, host, sha256=digest.upper())
    assert receipt.sha256 == digest
    assert Resolver(host).resolve("fakerel", world.task()).found


def test_a_digest_given_for_an_npm_install_is_refused(world: Any, kit: Any) -> None:
    from kandev_lsp.install import plan_install
    from kandev_lsp_typescript import LANGUAGE

    with pytest.raises(InstallError, match="only applies to release downloads"):
        plan_install(LANGUAGE, HostPlatform("linux", "x86_64"), sha256="0" * 64)


def test_a_digest_mismatch_installs_nothing(world: Any, kit: Any, release_server: Any) -> None:
    data, _ = kit.script_asset()
    release_server.publish("1.0.0", "fakerel.gz", data)
    spec = kit.release_spec(release_server.url, asset=ReleaseAsset("fakerel.gz", sha256="0" * 64))
    with pytest.raises(InstallError, match="SHA-256") as failure:
        install(world, kit.plugin_host(spec))
    assert "lsp_release_base_urls" in str(failure.value)  # says what to do
    cache = ServerCache(world.cache, "fakerel")
    assert cache.current_name() is None and cache.leftovers() == [] and cache.version_names() == []


def test_a_release_that_does_not_run_is_not_made_current(world: Any, kit: Any, release_server: Any) -> None:
    good, _ = kit.script_asset("fakerel 1.0.0")
    release_server.publish("1.0.0", "fakerel.gz", good, sha256_text=hashlib.sha256(good).hexdigest())
    install(world, kit.plugin_host(kit.release_spec(release_server.url)))
    bad, _ = kit.script_asset("cannot load libfoo.so", exit_code=127)
    release_server.publish("2.0.0", "fakerel.gz", bad, sha256_text=hashlib.sha256(bad).hexdigest())
    with pytest.raises(VerificationError, match="exited with status 127") as failure:
        install(world, kit.plugin_host(kit.release_spec(release_server.url, version="2.0.0")))
    assert "cannot load libfoo.so" in failure.value.output
    current = ServerCache(world.cache, "fakerel").current_receipt()
    assert current is not None and current.version == "1.0.0"
    assert ServerCache(world.cache, "fakerel").leftovers() == []


def test_a_configured_mirror_replaces_the_plugins_base_url(world: Any, kit: Any, release_server: Any) -> None:
    data, digest = kit.script_asset()
    release_server.publish("1.0.0", "fakerel.gz", data)
    unreachable = "http://127.0.0.1:9/nothing-listens-here"
    spec = kit.release_spec(unreachable, asset=ReleaseAsset("fakerel.gz", sha256=digest))
    with pytest.raises(InstallError):
        install(world, kit.plugin_host(spec))
    receipt, _ = install(
        world, kit.plugin_host(spec), manager={"release_base_urls": {"fakerel": release_server.url + "/"}}
    )
    assert receipt.source == f"{release_server.url}/1.0.0/fakerel.gz"
    assert release_server.paths_requested() == ["/1.0.0/fakerel.gz"]


def test_an_executable_inside_a_zip_archive_is_unpacked_into_bin(
    world: Any, kit: Any, release_server: Any
) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("fakerel-1.0.0/bin/fakerel")
        info.external_attr = 0o755 << 16
        archive.writestr(info, padded_script("fakerel from zip"))
        archive.writestr("fakerel-1.0.0/README", "docs")
    data = buffer.getvalue()
    release_server.publish("1.0.0", "fakerel.zip", data)
    asset = ReleaseAsset(
        "fakerel.zip",
        compression="zip",
        member="fakerel-1.0.0/bin/fakerel",
        sha256=hashlib.sha256(data).hexdigest(),
    )
    receipt, phases = install(world, kit.plugin_host(kit.release_spec(release_server.url, asset=asset)))
    assert "installing" in [p.phase for p in phases]  # the unpacking step
    folder = world.cache / "fakerel" / "current"
    assert sorted(os.listdir(folder)) == ["bin", "receipt.json"]  # archive and unpacked tree removed
    ran = subprocess.run([receipt.executable_path, "--version"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "fakerel from zip"


def test_a_zip_without_the_named_member_is_refused(world: Any, kit: Any, release_server: Any) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("other/file", "x")
    data = buffer.getvalue()
    release_server.publish("1.0.0", "fakerel.zip", data)
    asset = ReleaseAsset(
        "fakerel.zip", compression="zip", member="bin/fakerel", sha256=hashlib.sha256(data).hexdigest()
    )
    with pytest.raises(InstallError, match="has no bin/fakerel"):
        install(world, kit.plugin_host(kit.release_spec(release_server.url, asset=asset)))
    assert ServerCache(world.cache, "fakerel").leftovers() == []


def test_no_asset_for_this_host_means_no_installer(world: Any, kit: Any) -> None:
    other = HostPlatform("windows", "aarch64")
    spec = kit.release_spec("http://127.0.0.1:9", host=other)
    with pytest.raises(NoInstallerError, match="publishes no fakerel release"):
        install(world, kit.plugin_host(spec))
    assert not (world.cache / "fakerel").exists()


LSP_SERVER = """
import json, sys
MODE = {mode!r}
def read():
    headers = {{}}
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line in (b"\\r\\n", b"\\n"):
            break
        key, _, value = line.decode().partition(":")
        headers[key.strip().lower()] = value.strip()
    return json.loads(sys.stdin.buffer.read(int(headers["content-length"])))
def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
    sys.stdout.buffer.flush()
request = read()
if MODE == "silent":
    import time; time.sleep(600)
if MODE == "garbage":
    sys.stdout.write("Starting server on port 8080...\\n"); sys.stdout.flush(); sys.exit(0)
if MODE == "error":
    send({{"jsonrpc": "2.0", "id": request["id"], "error": {{"code": -32603, "message": "no node runtime"}}}})
    sys.exit(0)
send({{"jsonrpc": "2.0", "method": "window/logMessage", "params": {{"type": 3, "message": "hello"}}}})
send({{"jsonrpc": "2.0", "id": request["id"], "result": {{"capabilities": {{}}, "serverInfo": {{"name": "fakelsp", "version": "9"}}}}}})
while True:
    message = read()
    if message.get("method") == "shutdown":
        send({{"jsonrpc": "2.0", "id": message["id"], "result": None}})
    if message.get("method") == "exit":
        sys.exit(0)
"""


def lsp_release(world: Any, kit: Any, release_server: Any, mode: str) -> Any:
    script = f"#!{sys.executable}\n{LSP_SERVER.format(mode=mode)}".encode()
    data = gzip.compress(script)
    release_server.publish("1.0.0", "fakerel.gz", data)
    spec = kit.release_spec(
        release_server.url,
        asset=ReleaseAsset("fakerel.gz", sha256=hashlib.sha256(data).hexdigest()),
        version_args=(),
    )
    return kit.plugin_host(spec)


def test_a_server_without_version_args_is_verified_with_an_lsp_initialize(
    world: Any, kit: Any, release_server: Any
) -> None:
    receipt, _ = install(world, lsp_release(world, kit, release_server, "ok"))
    assert receipt.version == "1.0.0"
    assert kit.descendants() == []  # the checked server was shut down


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("silent", "did not answer an LSP initialize within 1 s"),
        ("garbage", "not LSP"),
        ("error", "rejected an LSP initialize"),
    ],
)
def test_servers_that_do_not_answer_initialize_properly_are_not_made_current(
    world: Any, kit: Any, release_server: Any, mode: str, expected: str
) -> None:
    with pytest.raises(VerificationError, match=expected):
        install(world, lsp_release(world, kit, release_server, mode), manager={"verify_timeout": 1.0})
    cache = ServerCache(world.cache, "fakerel")
    assert cache.current_name() is None and cache.leftovers() == []
    assert kit.descendants() == []
