"""``kandev-lsp broker``: the broker between editor clients and each task host's ``serve``
(contract: docs/broker-contract.md).

Module-level imports stay light: the CLI imports a subcommand's module to build its parser, and
``resolve`` must not pay for websockets or prometheus_client. The broker is imported inside the handler.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kandev_lsp.broker.config import DEFAULT_DETACH_TIMEOUT  # these three are pure: no websockets
from kandev_lsp.broker.leases import ClaimPolicy
from kandev_lsp.broker.tickets import DEFAULT_TICKET_TTL, MAX_TICKET_TTL
from kandev_lsp.cli.common import positive_seconds
from kandev_lsp.cli.serve import (
    add_allow_origin_argument,
    add_listen_arguments,
    add_log_level_argument,
    configure_logging,
)

if TYPE_CHECKING:
    from kandev_lsp.broker.auth import Authorizer
    from kandev_lsp.broker.directory import ExecutionDirectory
    from kandev_lsp.broker.lease_mode import SuppressedProviders
    from kandev_lsp.broker.owner_settings import OwnerSettings
    from kandev_lsp.broker.route import BrokerConfig
    from kandev_lsp.stream.auth import StreamToken


def add_broker_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="serve GET /lsp/{sessionId} for editor clients, with leases over each task host's serve",
        description=(
            "Serve GET /lsp/{sessionId}?language=L[&lease=HINT] and GET /metrics (see "
            "docs/broker-contract.md). Sessions resolve to task hosts through --directory FILE, re-read "
            "when it changes. Read once at start: KANDEV_FEATURES_LSP_BROWSER_CONTINUITY (leases; off: a "
            "plain authenticated proxy) and KANDEV_LSP_MAX_CONNECTIONS (default 8). Prints one JSON line on "
            'stdout when listening: {"event": "listening", "url": ..., "port": ...} (plus "token" when it '
            "generated one). Clients authenticate with 'Authorization: Bearer <token>'; browser pages with a "
            "single-use ticket their backend mints with that token (POST /lsp/tickets). SIGINT/SIGTERM/"
            "SIGHUP close every lease (backend_stop: each server is stopped) and every client with 1001, "
            "then exit 0."
        ),
    )
    parser.add_argument(
        "--directory",
        metavar="FILE",
        required=True,
        help="the execution directory: a JSON file mapping sessions to task hosts' stream URLs",
    )
    add_listen_arguments(parser)
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help=(
            "read the bearer token from FILE (else $KANDEV_LSP_BROKER_TOKEN, else a random token is "
            "printed once)"
        ),
    )
    add_allow_origin_argument(parser, "default: none, every request carrying an Origin is refused")
    parser.add_argument(
        "--detach-timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=DEFAULT_DETACH_TIMEOUT,
        help=(
            "with continuity on: how long a lease lives with no client attached before it ends "
            f"(detached_timeout) and its server is stopped (default: {DEFAULT_DETACH_TIMEOUT:g}, one hour)"
        ),
    )
    parser.add_argument(
        "--owner-settings",
        metavar="DIR",
        help=(
            "with continuity on: each lease owner's settings, DIR/<owner>.json in the settings file's "
            "format (the bearer token's owner is 'local'; a page ticket names its own); a lease's "
            "server runs with its owner's and hears every save. Default: each task host's settings file"
        ),
    )
    parser.add_argument(
        "--claim-policy",
        choices=[policy.value for policy in ClaimPolicy],
        default=ClaimPolicy.UNHINTED.value,
        help=(
            "with continuity on: when a client without a usable lease hint takes over another detached "
            "lease of its session and language. unhinted (default): only a client that sent no hint "
            "(a new tab); an expired or evicted hint starts fresh. never: always start fresh. always: "
            "whenever one exists"
        ),
    )
    parser.add_argument(
        "--ticket-ttl",
        metavar="SECONDS",
        type=_ticket_ttl,
        default=DEFAULT_TICKET_TTL,
        help=(
            "how long a page ticket minted by POST /lsp/tickets stays valid, 1-600 seconds "
            f"(default: {DEFAULT_TICKET_TTL:g}); each is good for one connection"
        ),
    )
    add_log_level_argument(parser, "info")
    parser.set_defaults(handler=run_broker)


def _ticket_ttl(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 1 <= seconds <= MAX_TICKET_TTL:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a ticket lifetime: give 1 to {MAX_TICKET_TTL:g} seconds (a page presents "
            "its ticket right after its backend minted it)"
        )
    return seconds


def run_broker(args: argparse.Namespace) -> int:
    import asyncio

    from kandev_lsp.broker.auth import BearerAuthorizer, load_broker_token
    from kandev_lsp.broker.config import continuity_enabled, max_connections
    from kandev_lsp.broker.directory import FileExecutionDirectory
    from kandev_lsp.broker.route import BrokerConfig

    configure_logging(args.log_level)
    token = load_broker_token(args.token_file)
    directory = FileExecutionDirectory(args.directory)
    # Both switches are read here, once: a running broker never changes mode under its clients (K18.1).
    config = BrokerConfig(
        host=args.host,
        port=args.port,
        continuity=continuity_enabled(),
        capacity=max_connections(),
        allowed_origins=tuple(args.allow_origin or ()),
        ticket_ttl=args.ticket_ttl,
        detach_timeout=args.detach_timeout,
        claim_policy=ClaimPolicy(args.claim_policy),
    )
    owner_settings = None
    if args.owner_settings is not None:
        from kandev_lsp.broker.owner_settings import SettingsDirectory

        owner_settings = SettingsDirectory(args.owner_settings)
    suppressed = None
    if config.continuity:  # the ready frame's suppressedProviders, from the plugins' hook (K2.3)
        from kandev_lsp.broker.lease_mode import plugin_suppressed_providers
        from kandev_lsp.cli.common import load_plugins

        suppressed = plugin_suppressed_providers(load_plugins())
    try:
        return asyncio.run(
            broker_until_signalled(
                directory, BearerAuthorizer(token), token, config, suppressed, owner_settings
            )
        )
    except OSError as exc:
        print(f"kandev-lsp: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1


async def broker_until_signalled(
    directory: ExecutionDirectory,
    authorizer: Authorizer,
    token: StreamToken,
    config: BrokerConfig,
    suppressed_providers: SuppressedProviders | None = None,
    owner_settings: OwnerSettings | None = None,
) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP, then close every lease (``backend_stop``, K12.21) and
    every client; the listening line goes to stdout (see :mod:`kandev_lsp.cli.listening`)."""
    from kandev_lsp.broker.route import BrokerServer
    from kandev_lsp.cli.listening import listen_until_signalled

    def describe(server: BrokerServer) -> dict[str, Any]:
        return {
            "url": server.url,
            "host": config.host,
            "port": server.port,
            "continuity": config.continuity,
            "capacity": config.capacity,
        }

    server = BrokerServer(
        directory=directory,
        authorizer=authorizer,
        config=config,
        suppressed_providers=suppressed_providers,
        owner_settings=owner_settings,
    )
    return await listen_until_signalled(server, describe, token)
