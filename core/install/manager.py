"""The install manager: one place that installs, lists and removes managed language servers.

Every install, whatever its recipe, goes the same way::

    waiting_for_lock -> (lock taken; leftovers of dead installs removed; already current? -> done)
      -> downloading / installing into versions/.staging-*  -> verifying  -> switching  -> done

Concurrency. Within one process, install calls for the same cache root and language share one running
install: later callers await the same task and get the same receipt. A caller that leaves (cancelled, or
its :class:`~kandev_lsp.cancel.CancelToken` set) does not stop the install for the others; when the last
caller leaves, the install is cancelled, its processes are stopped and its staging folder removed.
Across processes sharing one HOME, the file lock ``<cache>/<language>/.lock`` serialises installs, and
whoever takes it second finds the version already current and reuses it.

A dead install. The lock dies with its holder, but an install killed with SIGKILL leaves its staging
folder and possibly processes: on Linux its npm/go dies with it (parent-death signal), their children do
not. Each install records its owner and its processes' owner token beside the staging folder
(:mod:`kandev_lsp.install.owners`); the next holder of the lock kills whatever carries a recorded token
*first*, then removes the staging folders, so nothing re-creates them afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kandev_lsp.errors import UnknownLanguageError
from kandev_lsp.executables import managed_cache
from kandev_lsp.fileprobe import LocalFileProbe, ProbeStatus
from kandev_lsp.install.cache import ServerCache, cached_languages, remove_tree
from kandev_lsp.install.context import InstallContext, Staged
from kandev_lsp.install.errors import (
    CacheUnavailableError,
    InstallCancelled,
    InstallError,
    NoInstallerError,
    ToolchainMissingError,
)
from kandev_lsp.install.installers import missing_toolchain
from kandev_lsp.install.kinds import InstallOptions
from kandev_lsp.install.locks import hold_file_lock
from kandev_lsp.install.owners import InstallOwner, new_owner_token, record_owner, recorded_owners
from kandev_lsp.install.plan import InstallPlan, plan_install
from kandev_lsp.install.progress import InstallProgress, ProgressCallback, ProgressFanout
from kandev_lsp.install.receipts import InstallReceipt, utc_now, write_receipt
from kandev_lsp.install.verify import DEFAULT_TIMEOUT as DEFAULT_VERIFY_TIMEOUT
from kandev_lsp.install.verify import verify_server
from kandev_lsp.language import LanguageSpec
from kandev_lsp.taskenv import Task

if TYPE_CHECKING:
    from kandev_lsp.cancel import CancelToken
    from kandev_lsp.host import PluginHost
    from kandev_lsp.install.download import DownloadTimeouts
    from kandev_lsp.process import ProcessSupervisor

log = logging.getLogger("kandev_lsp.install")

#: Longest an installer tool (npm, go) may run. Downloads have per-phase timeouts instead.
DEFAULT_INSTALL_TIMEOUT = 20 * 60.0


@dataclass(frozen=True, slots=True)
class InstalledServer:
    """A language's current managed install, as ``kandev-lsp list`` shows it.

    ``matches_pin``: the install is exactly what the plugin pins today (same packages and versions), so
    ``kandev-lsp install`` would do nothing. ``binary_present``: its executable is still there and
    executable. ``plugin_loaded``: a loaded plugin still declares the language.
    """

    language: str
    receipt: InstallReceipt
    matches_pin: bool
    binary_present: bool
    plugin_loaded: bool

    @property
    def executable(self) -> str:
        return self.receipt.executable_path

    def to_json(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "version": self.receipt.version,
            "executable": self.executable,
            "matchesPin": self.matches_pin,
            "binaryPresent": self.binary_present,
            "pluginLoaded": self.plugin_loaded,
            "receipt": self.receipt.to_json(),
        }


@dataclass(eq=False)
class _SharedInstall:
    identity: str
    fanout: ProgressFanout
    task: asyncio.Task[InstallReceipt] | None = None
    waiters: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    #: Cancelled (every caller left, or aclose) but still unwinding: new callers must not join it.
    abandoned: bool = False

    def abandon(self) -> None:
        self.abandoned = True
        if self.task is not None:
            self.task.cancel()


class InstallManager:
    """Installs language servers into the managed cache of each task's HOME.

    :param plugins: the plugin host whose languages and recipes are installed.
    :param supervisor: owns every process installs start (default: each run owns its own).
    :param release_base_urls: per-language mirror for release downloads (``lsp_release_base_urls``).
    :param release_metadata_urls: per-language release metadata listing asset digests, instead of the
        plugin's (``lsp_release_metadata_urls``; ``{version}`` is replaced).
    :param download_timeouts: connect / headers / stalled-read limits for release downloads.
    :param install_timeout: the longest an installer tool (npm, go) may run.
    :param verify_timeout: the longest a new server may take to answer its verification.
    """

    def __init__(
        self,
        plugins: PluginHost,
        *,
        supervisor: ProcessSupervisor | None = None,
        release_base_urls: Mapping[str, str] | None = None,
        release_metadata_urls: Mapping[str, str] | None = None,
        download_timeouts: DownloadTimeouts | None = None,
        install_timeout: float | None = DEFAULT_INSTALL_TIMEOUT,
        verify_timeout: float = DEFAULT_VERIFY_TIMEOUT,
    ) -> None:
        self.plugins = plugins
        self._supervisor = supervisor
        self._options = InstallOptions(
            release_base_urls=dict(release_base_urls or {}),
            release_metadata_urls=dict(release_metadata_urls or {}),
            download_timeouts=download_timeouts,
        )
        self._install_timeout = install_timeout
        self._verify_timeout = verify_timeout
        self._running: dict[tuple[str, str], _SharedInstall] = {}
        self._closed = False

    async def __aenter__(self) -> InstallManager:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # Installing -------------------------------------------------------------------------------------
    async def install(
        self,
        language: str,
        task: Task,
        *,
        version: str | None = None,
        sha256: str | None = None,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> InstallReceipt:
        """Install the server of ``language`` for ``task`` (the plugin's pin, or ``version``) and make it
        current; return its receipt. An install that is already current is reused. ``sha256`` is the
        digest a release asset must have when the plugin pins none for it (see :func:`plan_install`).

        ``progress`` first receives ``waiting_for_lock``, before anything waits or installs; if that call
        raises, the exception propagates and this caller installs nothing.

        :raises UnknownLanguageError: no plugin declares ``language``.
        :raises NoInstallerError: nothing can install it here (manual-only, no asset, cache disabled).
        :raises InstallError: the install failed; the previous version is still current.
        :raises InstallCancelled: ``cancel`` was set, or the install was cancelled by :meth:`aclose`.
        """
        if cancel is not None and cancel.is_set():
            raise InstallCancelled(language)
        if self._closed:
            raise InstallError(language, "the install manager is closed; create a new one to install")
        spec = self.plugins.language(language)
        root = task.env.cache_root()
        plan = plan_install(
            spec,
            task.host,
            version=version,
            sha256=sha256,
            cache_root=root,
            digest_sources=self._options.digest_sources(spec.id),
        )
        assert root is not None  # plan_install refuses a disabled cache
        cache = managed_cache(task.workspace, task.env, LocalFileProbe(task.host))
        if not cache.usable:  # the resolver would refuse what this installs: never install it (issue 8)
            raise CacheUnavailableError(
                spec.id,
                f"cannot install the {spec.display_name} server: {cache.reason}. Or put the server on the "
                "task's PATH, outside the workspace.",
            )
        gap = missing_toolchain(spec, task.env, task.workspace, LocalFileProbe(task.host))
        if gap is not None:  # what the resolver says too: refused before the lock, the staging, anything
            raise ToolchainMissingError(spec.id, f"cannot install the {spec.display_name} server: {gap}")
        # The hook answers "installable unattended"; for a release asset (plan_install found one for this
        # host), a digest source the user gives settles the one thing the default answer cannot know.
        user_digest = plan.asset is not None and (
            sha256 is not None or bool(self._options.digest_sources(spec.id))
        )
        if not user_digest and not self.plugins.installer_available(spec, task.host):
            raise NoInstallerError(
                spec.id,
                f"no installer for {spec.display_name} on {task.host} (a plugin said so); install "
                f"{spec.command} yourself and put it on the task's PATH.",
            )
        if progress is not None:
            # The lock is not taken yet, and nobody may hold it: the report says so only when it is
            # held (below, through hold_file_lock's on_wait).
            progress(InstallProgress(spec.id, "waiting_for_lock"))
        key = (os.path.normcase(os.path.abspath(root)), spec.id)
        while True:
            if self._closed:  # closed while this caller waited for another install
                raise InstallCancelled(spec.id)
            shared = self._running.get(key)
            if shared is None or (shared.task is not None and shared.task.done()):
                shared = self._start(key, spec, plan, task)
                break
            if shared.identity == plan.identity and not shared.abandoned:
                break
            # Another version is installing, or a cancelled install is still unwinding: wait for it.
            await self._wait_until_done(spec.id, shared, cancel)
        return await self._join(spec.id, shared, progress, cancel)

    def _start(
        self, key: tuple[str, str], spec: LanguageSpec, plan: InstallPlan, task: Task
    ) -> _SharedInstall:
        shared = _SharedInstall(plan.identity, ProgressFanout(spec.id))
        shared.task = asyncio.create_task(
            self._install(spec, plan, task, shared.fanout, key[0]), name=f"kandev-lsp install {spec.id}"
        )
        self._running[key] = shared

        def finished(done: asyncio.Task[InstallReceipt]) -> None:
            if self._running.get(key) is shared:
                del self._running[key]
            shared.done.set()
            if not done.cancelled() and done.exception() is not None:
                log.debug("install of %s failed: %s", spec.id, done.exception())

        shared.task.add_done_callback(finished)
        return shared

    async def _join(
        self,
        language: str,
        shared: _SharedInstall,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
    ) -> InstallReceipt:
        assert shared.task is not None
        shared.waiters += 1
        listener = shared.fanout.add(progress) if progress is not None else None
        try:
            await self._wait_until_done(language, shared, cancel)
            if shared.task.cancelled():
                raise InstallCancelled(language)
            return shared.task.result()
        finally:
            if listener is not None:
                shared.fanout.remove(listener)
            shared.waiters -= 1
            if shared.waiters == 0 and not shared.task.done():
                shared.abandon()  # nobody wants it any more
                # The last caller leaves only once the install has unwound: its processes stopped and reaped,
                # its staging folder removed. A caller that answers "stopped" (the stream's 1000, K16.2) or
                # tears down (1001) after this returns can rely on it (issue 17 item 4).
                await _unwound(shared.task)

    async def _wait_until_done(
        self, language: str, shared: _SharedInstall, cancel: CancelToken | None
    ) -> None:
        """Wait for ``shared`` to finish without ever cancelling it; leave early when ``cancel`` is set."""
        if cancel is None:
            await shared.done.wait()
            return
        finished = asyncio.ensure_future(shared.done.wait())
        cancelled = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({finished, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (finished, cancelled):
                waiter.cancel()
            await asyncio.gather(finished, cancelled, return_exceptions=True)
        if not shared.done.is_set():
            raise InstallCancelled(language)

    async def _install(
        self, spec: LanguageSpec, plan: InstallPlan, task: Task, fanout: ProgressFanout, root: str
    ) -> InstallReceipt:
        cache = ServerCache(root, spec.id)
        try:
            cache.prepare()
            waiting = f"waiting for another install of the {spec.display_name} server to finish"
            async with hold_file_lock(cache.lock_path, lambda: fanout.phase("waiting_for_lock", waiting)):
                await _sweep_dead_installs(cache)
                cache.clean_leftovers()
                reused = self._reusable(cache, plan, task)
                if reused is not None:
                    if cache.current_name() != plan.directory:
                        fanout.phase("switching", f"switching to the installed {reused.version}")
                        cache.switch(plan.directory)
                    fanout.phase("done", f"{spec.command} {reused.version} is already installed")
                    return reused
                return await self._install_locked(spec, plan, task, fanout, cache)
        except OSError as exc:
            raise InstallError(
                spec.id,
                f"cannot write the managed cache at {cache.folder}: {exc.strerror or exc}. Check that the "
                "task's HOME is writable and has free space, then try again.",
            ) from exc

    def _reusable(self, cache: ServerCache, plan: InstallPlan, task: Task) -> InstallReceipt | None:
        """The installed version folder with exactly this plan's identity, if it is intact."""
        receipt = cache.receipt(plan.directory)
        if receipt is None or receipt.identity != plan.identity:
            return None
        if LocalFileProbe(task.host).probe(receipt.executable_path).status is not ProbeStatus.OK:
            return None
        return receipt

    async def _install_locked(
        self, spec: LanguageSpec, plan: InstallPlan, task: Task, fanout: ProgressFanout, cache: ServerCache
    ) -> InstallReceipt:
        owner = InstallOwner.current(new_owner_token())
        record = record_owner(cache.folder, owner)
        try:
            return await self._install_staged(spec, plan, task, fanout, cache, owner.token)
        finally:
            # Only now: every process of the install is stopped (run() returns or raises after that).
            with contextlib.suppress(OSError):
                record.unlink()

    async def _install_staged(
        self,
        spec: LanguageSpec,
        plan: InstallPlan,
        task: Task,
        fanout: ProgressFanout,
        cache: ServerCache,
        owner_token: str,
    ) -> InstallReceipt:
        staging = cache.new_staging()
        # The check runs in an empty folder of its own: never the task's workspace (where project files
        # could change the outcome) nor a folder holding the executable (a process never runs a program
        # from inside its working directory).
        scratch = cache.new_staging(suffix=".cwd")
        try:
            ctx = InstallContext(
                spec,
                plan.recipe,
                plan.asset,
                task,
                staging,
                scratch,
                fanout,
                supervisor=self._supervisor,
                timeout=self._install_timeout,
                owner_token=owner_token,
            )
            staged = await self._run_installer(plan, ctx)
            fanout.phase("verifying", f"checking that {spec.command} {plan.version} runs")
            said = await verify_server(
                spec,
                staged.command(staging),
                task,
                cwd=str(scratch),
                timeout=self._verify_timeout,
                supervisor=self._supervisor,
                owner_tokens=(owner_token,),
            )
            log.debug("%s verified: %s", spec.id, said)
            receipt = self._receipt(spec, plan, staged)
            write_receipt(receipt, staging)
            fanout.phase("switching", f"making {spec.command} {plan.version} current")
            previous = cache.current_name()
            published = cache.publish(staging, plan.directory)
            cache.switch(plan.directory)
            cache.prune({plan.directory} | ({previous} if previous else set()))
        except BaseException:
            with contextlib.suppress(OSError):
                remove_tree(staging)
            raise
        finally:
            with contextlib.suppress(OSError):
                remove_tree(scratch)
        fanout.phase("done", f"{spec.command} {plan.version} installed")
        return replace(receipt, directory=str(published))

    async def _run_installer(self, plan: InstallPlan, ctx: InstallContext) -> Staged:
        """Fill the staging folder the way the recipe's kind does (its registered installer)."""
        return await plan.installer.install(ctx, self._options)

    def _receipt(self, spec: LanguageSpec, plan: InstallPlan, staged: Staged) -> InstallReceipt:
        plugin, plugin_version = self._plugin_of(spec.id)
        return InstallReceipt(
            language=spec.id,
            plugin=plugin,
            plugin_version=plugin_version,
            recipe=plan.recipe.kind,
            version=plan.version,
            packages=plan.packages,
            identity=plan.identity,
            source=staged.source,
            executable=staged.executable,
            installed_at=utc_now(),
            toolchain=staged.toolchain,
            sha256=staged.sha256,
            interpreter=staged.interpreter,
            script=staged.script,
        )

    def _plugin_of(self, language: str) -> tuple[str, str]:
        name = self.plugins.plugin_of(language)
        for info in self.plugins.plugins():
            if info.name == name:
                return name, info.version
        return name, "unknown"

    # Listing and removing ---------------------------------------------------------------------------
    def installed(self, task: Task) -> list[InstalledServer]:
        """Every language with a current managed install in ``task``'s cache, sorted by language."""
        root = task.env.cache_root()
        if root is None:
            return []
        probe = LocalFileProbe(task.host)
        servers: list[InstalledServer] = []
        for language in cached_languages(root):
            receipt = ServerCache(root, language).current_receipt()
            if receipt is None:
                continue
            present = probe.probe(receipt.executable_path).status is ProbeStatus.OK
            pinned: str | None = None
            loaded = True
            try:
                pinned = plan_install(self.plugins.language(language), task.host, cache_root=root).identity
            except UnknownLanguageError:
                loaded = False
            except InstallError:
                pinned = None
            servers.append(InstalledServer(language, receipt, receipt.identity == pinned, present, loaded))
        return servers

    async def uninstall(self, language: str, task: Task) -> bool:
        """Remove every managed version of ``language`` from ``task``'s cache. Returns whether anything
        was installed. Waits for an install of the language that is running (here or in another process).

        A server already running from the cache keeps its open files but should be restarted.
        """
        root = task.env.cache_root()
        if root is None or language not in cached_languages(root):
            return False  # names come from the folder listing, so a language is never a path
        cache = ServerCache(root, language)
        cache.check_own_folders()  # before the lock, whose file would be created through a linked folder
        try:
            async with hold_file_lock(cache.lock_path):
                return cache.remove_all()
        except OSError as exc:
            raise InstallError(
                language, f"cannot remove {cache.folder}: {exc.strerror or exc}. Check its permissions."
            ) from exc

    async def aclose(self) -> None:
        """Cancel every running install and wait until their processes are gone and staging removed."""
        self._closed = True
        running = list(self._running.values())
        for shared in running:
            shared.abandon()
        await asyncio.gather(*(shared.task for shared in running if shared.task), return_exceptions=True)


async def _unwound(task: asyncio.Task[InstallReceipt]) -> None:
    """Wait until the cancelled install ``task`` has finished its cleanup, whatever it ends with. A second
    cancellation of the caller meanwhile does not cut the wait short (the install would still be unwinding
    when the caller goes on); it is raised once the install is done."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


async def _sweep_dead_installs(cache: ServerCache) -> None:
    """Kill the processes of installs that are no longer running, and forget their records.

    Called under the language's lock, before the staging folders are removed: a record found there was
    left by an install that cannot be running (it would hold the lock).
    """
    from kandev_lsp.process import reap_marked

    for path, owner in recorded_owners(cache.folder):
        if owner is not None:
            killed = await reap_marked([owner.token])
            state = "still runs, but its install ended" if owner.is_alive() else "is gone"
            log.log(
                logging.WARNING if killed else logging.DEBUG,
                "install of %s by pid %d was interrupted (the process %s); stopped %d process(es) it left: %s",
                cache.language,
                owner.pid,
                state,
                len(killed),
                ", ".join(map(str, killed)) or "none",
            )
        with contextlib.suppress(OSError):
            path.unlink()
