"""Resolution, doctor's installer check and install agree on whether a release can be verified (issue 7
item 23): a release recipe whose asset nobody pins a digest for and whose origin publishes none is not
"installable", its install error says how to give a digest (``--sha256``), and giving one installs it."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import hashlib
import json
import sys
from typing import Any

import pytest
from kandev_lsp import LanguageSpec, ReleaseRecipe
from kandev_lsp.install import InstallManager, NoInstallerError
from kandev_lsp.platform import HostPlatform
from kandev_lsp.resolver import MissingReason, Resolver


def unpublished(spec: LanguageSpec, **recipe_changes: Any) -> LanguageSpec:
    """``spec`` whose release origin publishes no digests (like rust-analyzer's, before item 23)."""
    assert isinstance(spec.install, ReleaseRecipe)
    recipe = dataclasses.replace(spec.install, digest_files=False, **recipe_changes)
    return dataclasses.replace(spec, install=recipe)


def publish(release_server: Any) -> str:
    data = gzip.compress(f"#!{sys.executable}\nprint('fakerel 1.0.0')\n".encode())
    release_server.publish("1.0.0", "fakerel.gz", data)
    return hashlib.sha256(data).hexdigest()


def test_no_digest_anywhere_means_not_installable_and_the_install_error_names_sha256(
    world: Any, kit: Any, release_server: Any
) -> None:
    digest = publish(release_server)
    spec = unpublished(kit.release_spec(release_server.url))
    host = kit.plugin_host(spec)

    resolution = Resolver(host).resolve("fakerel", world.task(PATH="/nonexistent"))
    assert not resolution.found and not resolution.installable
    assert resolution.reason is MissingReason.NO_INSTALLER
    assert "kandev-lsp install fakerel --sha256 HEX" in resolution.message  # what to do, not a dead end
    assert host.installer_available(spec, HostPlatform.current()) is False  # what doctor reports

    with pytest.raises(NoInstallerError, match="--sha256") as refused:
        asyncio.run(InstallManager(host).install("fakerel", world.task()))
    assert "fakerel.gz" in str(refused.value)
    assert release_server.paths_requested() == []  # decided before any request

    receipt = asyncio.run(InstallManager(host).install("fakerel", world.task(), sha256=digest))
    assert receipt.sha256 == digest


def test_a_declared_metadata_source_makes_it_installable_and_the_install_uses_it(
    world: Any, kit: Any, release_server: Any
) -> None:
    digest = publish(release_server)
    release_server.route(
        "/meta/1.0.0", f'{{"assets": [{{"name": "fakerel.gz", "digest": "sha256:{digest}"}}]}}'.encode()
    )
    spec = unpublished(
        kit.release_spec(release_server.url), metadata_url=release_server.url + "/meta/{version}"
    )
    host = kit.plugin_host(spec)

    resolution = Resolver(host).resolve("fakerel", world.task(PATH="/nonexistent"))
    assert resolution.installable and resolution.reason is MissingReason.INSTALLABLE_NOT_REQUESTED

    receipt = asyncio.run(InstallManager(host).install("fakerel", world.task()))
    assert receipt.sha256 == digest
    assert release_server.paths_requested() == ["/meta/1.0.0", "/1.0.0/fakerel.gz"]


def test_a_mirror_the_user_configured_supplies_the_digest_file(
    world: Any, kit: Any, release_server: Any
) -> None:
    digest = publish(release_server)
    release_server.route("/1.0.0/fakerel.gz.sha256", f"{digest}  fakerel.gz\n".encode())
    spec = unpublished(kit.release_spec("https://origin.invalid/releases"))
    host = kit.plugin_host(spec)
    manager = InstallManager(host, release_base_urls={"fakerel": release_server.url})
    receipt = asyncio.run(manager.install("fakerel", world.task()))
    assert receipt.sha256 == digest


def test_every_process_of_an_install_carries_the_token_its_owner_record_names(
    world: Any, kit: Any, release_server: Any, tmp_path: Any
) -> None:
    """Issue 7 item 5: what the next install sweeps after a SIGKILL is found by the token recorded in
    ``.owner-<token>.json``; the server under verification must carry it too, not only npm/go."""
    seen = tmp_path / "seen.json"
    script = (
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"folder = os.path.join(os.environ['HOME'], '.kandev', 'lsp-servers', 'fakerel')\n"
        "records = [n for n in os.listdir(folder) if n.startswith('.owner-')]\n"
        f"json.dump({{'records': records, 'marker': os.environ.get('KANDEV_LSP_OWNER', '')}}, open({str(seen)!r}, 'w'))\n"
        "print('fakerel 1.0.0')\n"
    )
    data = gzip.compress(script.encode())
    release_server.publish("1.0.0", "fakerel.gz", data)
    spec = kit.release_spec(release_server.url)
    host = kit.plugin_host(spec)
    asyncio.run(
        InstallManager(host).install("fakerel", world.task(), sha256=hashlib.sha256(data).hexdigest())
    )
    observed = json.loads(seen.read_text())
    [record] = observed["records"]
    token = record.removeprefix(".owner-").removesuffix(".json")
    assert token.startswith("install-") and token in observed["marker"].split()
    # ...and once the install is over its record is gone.
    assert not [p for p in (world.cache / "fakerel").iterdir() if p.name.startswith(".owner-")]
