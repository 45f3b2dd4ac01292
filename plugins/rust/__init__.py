"""Rust through rust-analyzer, installed from its per-platform release asset (a single gzip stream).

Only macOS and Linux on x86_64 and aarch64 have assets, so other hosts report "no installer" while a
rust-analyzer a user installed by hand still resolves. ``~/.cargo/bin/rust-analyzer`` is often a rustup
proxy whose component is not installed: the core runs such a proxy once before trusting it.

The releases publish no ``<asset>.sha256`` beside the assets, but the release origin records every
asset's SHA-256 in its release metadata (the ``digest`` of each asset in the GitHub releases API), which
the core fetches over HTTPS before the download. A mirror (``lsp_release_base_urls``) publishes
``.sha256`` files instead; ``lsp_release_metadata_urls`` points the metadata elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from kandev_lsp import LanguageSpec, Readiness, ReadinessKind, ReleaseAsset, ReleaseRecipe, hookimpl

RELEASE_VERSION = "2025-11-24"
RELEASE_BASE_URL = "https://github.com/rust-lang/rust-analyzer/releases/download"
RELEASE_METADATA_URL = "https://api.github.com/repos/rust-lang/rust-analyzer/releases/tags/{version}"

_TARGETS = {
    "linux-x86_64": "x86_64-unknown-linux-gnu",
    "linux-aarch64": "aarch64-unknown-linux-gnu",
    "darwin-x86_64": "x86_64-apple-darwin",
    "darwin-aarch64": "aarch64-apple-darwin",
}

LANGUAGE = LanguageSpec(
    id="rust",
    display_name="Rust",
    command="rust-analyzer",
    file_extensions=(".rs",),
    language_ids=("rust",),
    root_markers=("Cargo.toml", "rust-project.json"),
    install=ReleaseRecipe(
        version=RELEASE_VERSION,
        base_url=RELEASE_BASE_URL,
        assets={
            key: ReleaseAsset(f"rust-analyzer-{target}.gz", compression="gzip")
            for key, target in _TARGETS.items()
        },
        bin="rust-analyzer",
        digest_files=False,
        metadata_url=RELEASE_METADATA_URL,
    ),
    homepage="https://rust-analyzer.github.io",
    proxy_launchers=("rustup",),
    document_language_ids={".rs": "rust"},
    # rust-analyzer answers [] until `cargo metadata` finishes; it reports quiescence through
    # experimental/serverStatus once the client asks for it.
    readiness=Readiness(ReadinessKind.SERVER_STATUS, timeout=300.0),
    client_capabilities={"experimental": {"serverStatusNotification": True}},
)


@hookimpl
def kandev_lsp_languages() -> Iterable[LanguageSpec]:
    return [LANGUAGE]
