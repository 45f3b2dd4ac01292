"""One server lifecycle for every front end: resolve -> install (per policy) -> resolve -> start.

``serve`` (the task-host stream), ``run`` (stdio for editors), the broker and the agent tools all need
the same walk to get a running server for a language and a task. It lives here once; the front ends
keep only what is theirs: the stream maps a :class:`LaunchFailure` to a close code and sends status
frames from a :class:`LaunchObserver`, ``run`` maps it to an exit status and prints progress on stderr,
the agent tools turn it into an ``unavailable`` notice.

What the lifecycle decides (issue 8 "One lifecycle"; K8.1, K9.2-K9.5):

* Whether to install is a :class:`InstallPolicy`: the front end's explicit request (``run --install``,
  ``autoInstall=1``) or the user's ``lsp_auto_install_languages``. Nothing else installs.
* The observer hears ``installing`` *before* the install waits for the lock; if that call raises (the
  stream could not write its status frame) nothing is installed (K9.3).
* A server that was installed but still does not resolve is an install failure whose message says what
  the resolver found, never advice to install again (that loops).
* Release mirrors and metadata come from the settings file, read here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from kandev_lsp._values import dataclass, field
from kandev_lsp.errors import KandevLspError
from kandev_lsp.resolver import MissingReason, Resolution, Resolver

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.install import InstallManager, InstallProgress, InstallReceipt
    from kandev_lsp.process import OwnedProcess, ProcessSupervisor, StartedProcess
    from kandev_lsp.session import BridgeLimits, ServerSession
    from kandev_lsp.settings import SettingsFile, UserSettings
    from kandev_lsp.taskenv import Task


class LaunchFailure(StrEnum):
    """Why no server runs, as a category each front end maps to its own code."""

    INSTALLABLE_NOT_REQUESTED = "installable_not_requested"
    NO_INSTALLER = "no_installer"
    CACHE_UNAVAILABLE = "cache_unavailable"
    UNSUPPORTED_LANGUAGE = "unsupported_language"
    INSTALL_FAILED = "install_failed"
    INSTALL_CANCELLED = "install_cancelled"
    START_FAILED = "start_failed"


_MISSING: dict[MissingReason, LaunchFailure] = {
    MissingReason.INSTALLABLE_NOT_REQUESTED: LaunchFailure.INSTALLABLE_NOT_REQUESTED,
    MissingReason.NO_INSTALLER: LaunchFailure.NO_INSTALLER,
    MissingReason.CACHE_UNAVAILABLE: LaunchFailure.CACHE_UNAVAILABLE,
    MissingReason.UNSUPPORTED_LANGUAGE: LaunchFailure.UNSUPPORTED_LANGUAGE,
}


class LaunchError(KandevLspError):
    """No server could be had: :attr:`failure` says which way, the message what to do next.

    :attr:`resolution` is the last resolution made (None when the failure came before one).
    :attr:`output` is the tail of the installer's output for an install failure ("" otherwise): the agent
    tools quote it apart from the message, where an MCP client shows it (npm's error lines).
    """

    failure: LaunchFailure

    def __init__(
        self,
        failure: LaunchFailure,
        message: str,
        *,
        resolution: Resolution | None = None,
        output: str = "",
    ):
        super().__init__(message)
        self.failure = failure
        self.resolution = resolution
        self.output = output

    @property
    def first_line(self) -> str:
        text = str(self).strip()
        return text.splitlines()[0] if text else self.failure.value


@dataclass(frozen=True, slots=True)
class InstallPolicy:
    """When a missing, installable server may be installed.

    :param requested: the caller asked for it (``run --install``, the stream's ``autoInstall=1``).
    :param auto_languages: the user's ``lsp_auto_install_languages``: installed without being asked.
    """

    requested: bool = False
    auto_languages: frozenset[str] = frozenset()

    def allows(self, language: str) -> bool:
        return self.requested or language in self.auto_languages

    @classmethod
    def from_settings(cls, settings: UserSettings | None, *, requested: bool = False) -> InstallPolicy:
        languages = frozenset(settings.auto_install_languages) if settings is not None else frozenset()
        return cls(requested=requested, auto_languages=languages)


def refusal(resolution: Resolution, policy: InstallPolicy) -> LaunchFailure | None:
    """Why :meth:`Lifecycle.ensure` would fail at once for ``resolution`` (pure), None when it is found or
    ``policy`` lets it be installed. ``run`` asks before it opens stdio, to exit with the reason's code."""
    if resolution.found:
        return None
    assert resolution.reason is not None
    failure = _MISSING[resolution.reason]
    if failure is LaunchFailure.INSTALLABLE_NOT_REQUESTED and policy.allows(resolution.language):
        return None
    return failure


class LaunchObserver(Protocol):
    """What a front end hears while a server is prepared. Every method is optional in spirit: subclass
    :class:`QuietObserver` and override what you show."""

    async def installing(self, language: str) -> None:
        """An install is about to wait for the lock. Raising here installs nothing."""

    def progress(self, report: InstallProgress) -> None:
        """Install progress (phases, downloaded bytes)."""

    async def installed(self, language: str, receipt: InstallReceipt) -> None:
        """The install finished and the server now resolves."""

    async def install_failed(self, language: str, message: str) -> None:
        """The install failed (the :class:`LaunchError` follows)."""


class QuietObserver:
    """A :class:`LaunchObserver` that shows nothing."""

    async def installing(self, language: str) -> None:
        return None

    def progress(self, report: InstallProgress) -> None:
        return None

    async def installed(self, language: str, receipt: InstallReceipt) -> None:
        return None

    async def install_failed(self, language: str, message: str) -> None:
        return None


def install_manager_for(
    plugins: PluginHost, settings: UserSettings | None, *, supervisor: ProcessSupervisor | None = None
) -> InstallManager:
    """An :class:`~kandev_lsp.install.InstallManager` with the release mirrors and metadata the user's
    settings give: the one place settings reach an installer (``install``, ``run``, ``serve``)."""
    from kandev_lsp.install import InstallManager

    return InstallManager(
        plugins,
        supervisor=supervisor,
        release_base_urls=dict(settings.release_base_urls) if settings else None,
        release_metadata_urls=dict(settings.release_metadata_urls) if settings else None,
    )


@dataclass
class Lifecycle:
    """Gets running servers for the tasks of one plugin host; shared by every connection of a front end.

    :param plugins: the loaded plugins.
    :param settings: the user's settings file (mirrors, auto-install languages, server settings).
    :param supervisor: owns every process started (servers and installer tools), when given.
    :param resolver_factory: builds the resolver (tests inject a probe).
    """

    plugins: PluginHost
    settings: SettingsFile | None = None
    supervisor: ProcessSupervisor | None = None
    resolver_factory: Callable[[PluginHost], Resolver] = Resolver
    _installer: InstallManager | None = field(default=None, init=False, repr=False)
    _resolver: Resolver | None = field(default=None, init=False, repr=False)
    #: Set by :meth:`aclose`: no install starts after it (one that asked meanwhile is cancelled).
    _closed: bool = field(default=False, init=False, repr=False)

    # Settings --------------------------------------------------------------------------------------------
    def user_settings(self) -> UserSettings | None:
        return self.settings.current()[0] if self.settings is not None else None

    def policy(self, *, requested: bool) -> InstallPolicy:
        """The install policy for a caller that did (or did not) ask to install."""
        return InstallPolicy.from_settings(self.user_settings(), requested=requested)

    # Resolve ----------------------------------------------------------------------------------------------
    def resolve_now(self, language: str, task: Task) -> Resolution:
        """Resolve on this thread (a few hundred microseconds of ``stat`` calls)."""
        if self._resolver is None:
            self._resolver = self.resolver_factory(self.plugins)
        return self._resolver.resolve(language, task)

    async def resolve(self, language: str, task: Task) -> Resolution:
        """Resolve off the event loop (a slow filesystem must not stall other connections)."""
        import asyncio  # here: ``run`` resolves and starts its server before it imports asyncio

        return await asyncio.to_thread(self.resolve_now, language, task)

    # Install ----------------------------------------------------------------------------------------------
    def install_manager(self) -> InstallManager:
        """The shared install manager, created on the first install (it imports the installers)."""
        if self._installer is None:
            self._installer = install_manager_for(
                self.plugins, self.user_settings(), supervisor=self.supervisor
            )
        return self._installer

    def install_summary(self, language: str, task: Task) -> str | None:
        """What installing ``language`` runs, for a progress message: ``npm typescript-language-server@5.3.0
        typescript@5.9.3`` (the installer's kind and the pinned packages), or None when no plan can be made
        (the install itself then says why)."""
        from kandev_lsp.install.plan import plan_install

        try:
            plan = plan_install(self.plugins.language(language), task.host, cache_root=task.env.cache_root())
        except Exception:  # a plan that cannot be made fails the install with its own message
            return None
        return " ".join([plan.recipe.kind, *plan.packages])

    async def ensure(
        self,
        language: str,
        task: Task,
        policy: InstallPolicy,
        observer: LaunchObserver | None = None,
        *,
        resolution: Resolution | None = None,
    ) -> Resolution:
        """A found :class:`Resolution` for ``language``, installing first when ``policy`` allows.

        :param resolution: a resolution the caller already made (skips the first resolve).
        :raises LaunchError: not found and not installable under ``policy``, or the install failed.
        :raises asyncio.CancelledError: the caller was cancelled; the install is cancelled and reaped.
        """
        if resolution is None:
            resolution = await self.resolve(language, task)
        if resolution.found:
            return resolution
        failure = refusal(resolution, policy)
        if failure is not None:
            raise LaunchError(failure, resolution.message, resolution=resolution)
        return await self._install(language, task, observer or QuietObserver())

    async def _install(self, language: str, task: Task, observer: LaunchObserver) -> Resolution:
        from kandev_lsp.install import InstallCancelled, InstallError, NoInstallerError

        closing = "kandev-lsp is stopping: no install starts now"
        if self._closed:
            raise LaunchError(LaunchFailure.INSTALL_CANCELLED, closing)
        await observer.installing(language)
        # Closed while the front end wrote its "installing": aclose() reaped no install of it.
        if self._closed:
            raise LaunchError(LaunchFailure.INSTALL_CANCELLED, closing)
        try:
            receipt = await self.install_manager().install(language, task, progress=observer.progress)
        except InstallCancelled as exc:
            raise LaunchError(LaunchFailure.INSTALL_CANCELLED, str(exc)) from None
        except NoInstallerError as exc:
            await observer.install_failed(language, str(exc))
            raise LaunchError(LaunchFailure.NO_INSTALLER, str(exc)) from None
        except InstallError as exc:
            await observer.install_failed(language, str(exc))
            raise LaunchError(LaunchFailure.INSTALL_FAILED, str(exc), output=exc.output) from None
        resolution = await self.resolve(language, task)
        if not resolution.found:
            message = (
                f"the {language} server was installed ({receipt.version}) but is still not found for this "
                f"task: {resolution.message} Run `kandev-lsp resolve {language} --explain` with the same "
                "task flags to see every candidate and why it was refused."
            )
            await observer.install_failed(language, message)
            raise LaunchError(LaunchFailure.INSTALL_FAILED, message, resolution=resolution)
        await observer.installed(language, receipt)
        return resolution

    # Start ------------------------------------------------------------------------------------------------
    async def spawn(
        self, resolution: Resolution, task: Task, *, stderr: Callable[[str], None] | None = None
    ) -> OwnedProcess:
        """Start the resolved server as a bare owned process (stdin/stdout piped, stderr captured), for
        callers that speak LSP themselves (:class:`kandev_lsp.lsp.LspClient`, the agent tools).

        :raises LaunchError: ``START_FAILED`` when the process could not be started.
        """
        from kandev_lsp.process import ProcessStartError, spawn

        _check_workspace(resolution, task)
        try:
            return await spawn(
                list(resolution.argv),
                env=task.env,
                cwd=task.workspace,
                stdin=True,
                stdout="pipe",
                stderr="capture",
                supervisor=self.supervisor,
                on_output=stderr,
            )
        except ProcessStartError as exc:
            raise LaunchError(LaunchFailure.START_FAILED, str(exc), resolution=resolution) from None

    def start_now(
        self, resolution: Resolution, task: Task, *, stderr: Callable[[str], None] | None = None
    ) -> StartedProcess:
        """:meth:`spawn` without an event loop (and without importing asyncio), by the same rules: ``run``
        starts its server this way, so that the server starts up while kandev-lsp imports the rest
        (issue 7 item 25). Pass the result to :meth:`adopt` inside the loop at once.

        :raises LaunchError: ``START_FAILED`` when the process could not be started.
        """
        from kandev_lsp.process import ProcessStartError, start_now

        _check_workspace(resolution, task)
        try:
            return start_now(
                list(resolution.argv),
                env=task.env,
                cwd=task.workspace,
                stdin=True,
                stdout="pipe",
                stderr="capture",
                on_output=stderr,
            )
        except ProcessStartError as exc:
            raise LaunchError(LaunchFailure.START_FAILED, str(exc), resolution=resolution) from None

    async def adopt(self, started: StartedProcess) -> OwnedProcess:
        """The :class:`OwnedProcess` for a server :meth:`start_now` started, owned by this lifecycle's
        supervisor."""
        from kandev_lsp.process import adopt

        return await adopt(started, supervisor=self.supervisor)

    async def wrap(
        self,
        process: OwnedProcess,
        resolution: Resolution,
        *,
        limits: BridgeLimits | None = None,
        **session_options: Any,
    ) -> ServerSession:
        """A :class:`ServerSession` around a server :meth:`spawn` started (``run`` spawns before it imports
        the session machinery, so the server's start-up overlaps kandev-lsp's)."""
        from kandev_lsp.session import DEFAULT_BRIDGE_LIMITS, ServerSession

        return await ServerSession.wrap(
            process,
            language=self.plugins.language(resolution.language),
            plugins=self.plugins,
            settings=self.settings,
            limits=limits or DEFAULT_BRIDGE_LIMITS,
            **session_options,
        )

    async def start(
        self,
        resolution: Resolution,
        task: Task,
        *,
        limits: BridgeLimits | None = None,
        **session_options: Any,
    ) -> ServerSession:
        """Start the resolved server in the task's workspace with the task's environment.

        :raises LaunchError: ``START_FAILED`` when the process could not be started.
        """
        from kandev_lsp.process import ProcessStartError
        from kandev_lsp.session import DEFAULT_BRIDGE_LIMITS, ServerSession

        spec = self.plugins.language(resolution.language)
        _check_workspace(resolution, task)
        try:
            return await ServerSession.start(
                resolution.argv,
                task,
                language=spec,
                plugins=self.plugins,
                settings=self.settings,
                limits=limits or DEFAULT_BRIDGE_LIMITS,
                supervisor=self.supervisor,
                **session_options,
            )
        except ProcessStartError as exc:
            raise LaunchError(LaunchFailure.START_FAILED, str(exc), resolution=resolution) from None

    async def launch(
        self,
        language: str,
        task: Task,
        policy: InstallPolicy,
        observer: LaunchObserver | None = None,
        *,
        limits: BridgeLimits | None = None,
        **session_options: Any,
    ) -> ServerSession:
        """:meth:`ensure` then :meth:`start`: the whole walk for callers with nothing to do in between."""
        resolution = await self.ensure(language, task, policy, observer)
        return await self.start(resolution, task, limits=limits, **session_options)

    async def aclose(self) -> None:
        """Close the install manager: installs still running are cancelled, and this returns once their
        processes are reaped and their staging folders removed. No install starts afterwards."""
        self._closed = True
        installer, self._installer = self._installer, None
        if installer is not None:
            await installer.aclose()

    async def __aenter__(self) -> Lifecycle:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


def _check_workspace(resolution: Resolution, task: Task) -> None:
    """The one workspace check (:mod:`kandev_lsp.workspace_access`) before a server starts in it: an
    unreadable workspace is a start failure that says so, not the server's ("cannot start ...: permission
    denied", issue 17 item 5).

    :raises LaunchError: ``START_FAILED`` with the workspace's problem.
    """
    from kandev_lsp.workspace_access import workspace_problem

    problem = workspace_problem(task.workspace)
    if problem is not None:
        raise LaunchError(LaunchFailure.START_FAILED, problem, resolution=resolution)
