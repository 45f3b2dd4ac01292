"""Loading plugins and calling their hooks: the only place that talks to pluggy.

Built-in languages and third-party ones load through the same entry-point group (``kandev_lsp``) and the
same :meth:`PluginHost.register`. A plugin that fails to import, implements an unknown hook, declares a
bad or duplicate language, or raises inside a hook is recorded as a :class:`PluginProblem` under its name
and skipped; the other languages keep working.

Built-in plugins (the entry points of the kandev-lsp distribution itself) are loaded first, so a built-in
keeps its language ids whatever a third-party entry point is called: a later duplicate is the one skipped.
Two languages that claim the same LSP ``languageId`` both load, with a warning in :attr:`PluginHost.warnings`.

Problems and warnings found while loading are data the loader reports (:attr:`PluginHost.problems`,
:attr:`PluginHost.warnings`), not log records: ``kandev-lsp`` prints each once. A hook that raises later is
logged as a warning on ``kandev_lsp.hooks`` too, since no loader is there to report it.

Environment switches (read from the agent's environment when the host is created):

* ``KANDEV_LSP_DISABLE_PLUGINS=name,name``: do not load these plugins (by entry-point name); a name no
  installed plugin has is a warning in :attr:`PluginHost.warnings` (a typo must not pass for a switch).
* ``KANDEV_LSP_TRACE_HOOKS=1``: log every hook call (hook, plugin, result type; never arguments, which
  carry task environments) to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pluggy
from kandev_lsp import defaults, entrypoints, hookspecs
from kandev_lsp._values import dataclass, field
from kandev_lsp.configuration import ConfigurationAnswer
from kandev_lsp.discovery import Candidate
from kandev_lsp.errors import UnknownLanguageError
from kandev_lsp.language import LanguageSpec, Readiness
from kandev_lsp.markers import ENTRY_POINT_GROUP, PROJECT_NAME
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import Task

if TYPE_CHECKING:
    import logging

DISABLE_ENV = "KANDEV_LSP_DISABLE_PLUGINS"
BUILTIN_DISTRIBUTION = "kandev-lsp"
TRACE_ENV = "KANDEV_LSP_TRACE_HOOKS"
CORE_PLUGIN = "kandev_lsp.defaults"

TRACE_LOGGER = "kandev_lsp.hooks"


def _trace_log() -> logging.Logger:
    import logging

    return logging.getLogger(TRACE_LOGGER)


def _tracing() -> bool:
    """Whether hook calls are logged at DEBUG on :data:`TRACE_LOGGER`.

    Until something imports :mod:`logging`, nothing can have configured a logger, so nothing is enabled
    at DEBUG: the answer is the same, and a short-lived ``kandev-lsp resolve`` never imports logging.
    """
    logging = sys.modules.get("logging")
    return logging is not None and bool(logging.getLogger(TRACE_LOGGER).isEnabledFor(logging.DEBUG))


@dataclass(frozen=True, slots=True)
class PluginProblem:
    """A plugin that failed to load, or failed inside a hook (raised, or returned what the hook cannot use)."""

    plugin: str
    phase: str  # "load" or the hook name
    error: str

    def __str__(self) -> str:
        where = "failed to load" if self.phase == "load" else f"failed in {self.phase}"
        return f"plugin {self.plugin!r} {where}: {self.error}"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A loaded plugin, for ``kandev-lsp plugins``."""

    name: str
    version: str
    module: str
    hooks: tuple[str, ...]
    languages: tuple[str, ...]


@dataclass
class _Loaded:
    name: str
    version: str
    plugin: object
    languages: list[LanguageSpec] = field(default_factory=list)


def is_builtin(point: entrypoints.EntryPointLike) -> bool:
    """Whether ``point`` is one of kandev-lsp's own plugins (declared by the kandev-lsp distribution).

    Decided by the distribution, never by the entry point's or the module's name, which anyone can choose.
    """
    if point.dist is None:
        return False
    name: str = point.dist.name
    return name.lower().replace("_", "-").replace(".", "-") == BUILTIN_DISTRIBUTION


#: What a plugin's code may raise without taking kandev-lsp down: any error, and ``SystemExit`` too (a module
#: that calls ``sys.exit()`` at import or in a hook would otherwise end every command, ``serve`` and ``mcp``
#: included, with the plugin's status and no word). KeyboardInterrupt is the person's, never the plugin's.
PLUGIN_FAILURES: tuple[type[BaseException], ...] = (Exception, SystemExit)


def _describe(exc: BaseException) -> str:
    """One line: the exception's type and message (multi-line messages joined, so nothing is lost)."""
    text = " / ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class PluginHost:
    """A plugin manager holding the core hookspecs, the core defaults and the loaded plugins.

    Create one per process (or per test) with :meth:`load`; nothing is created at import time. The typed
    methods below are the only way the rest of kandev-lsp calls hooks.
    """

    def __init__(self, *, trace: bool = False) -> None:
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self._loaded: dict[str, _Loaded] = {}
        self._languages: dict[str, LanguageSpec] = {}
        self._owner: dict[str, str] = {}
        self._lsp_ids: dict[str, str] = {}  # LSP languageId -> the language that claimed it first
        self.problems: list[PluginProblem] = []
        self.warnings: list[str] = []
        self.disabled: list[str] = []
        if trace and not _trace_log().handlers:
            import logging

            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("kandev-lsp hook: %(message)s"))
            _trace_log().addHandler(handler)
            _trace_log().setLevel(logging.DEBUG)
        self._pm.register(defaults, name=CORE_PLUGIN)

    # Loading -----------------------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        entry_points: Iterable[entrypoints.EntryPointLike] | None = None,
    ) -> PluginHost:
        """A host with every plugin of the ``kandev_lsp`` entry-point group, minus disabled ones.

        Built-ins first, then third-party plugins, each group by entry-point name: a third-party plugin
        that declares a built-in's language is the duplicate, whatever its name sorts as.
        """
        environ = os.environ if environ is None else environ
        host = cls(trace=environ.get(TRACE_ENV, "") not in ("", "0", "false"))
        blocked = {name.strip() for name in environ.get(DISABLE_ENV, "").split(",") if name.strip()}
        points = sorted(
            entrypoints.entry_points(ENTRY_POINT_GROUP) if entry_points is None else entry_points,
            key=lambda p: (not is_builtin(p), p.name),
        )
        for point in points:
            if point.name in blocked:
                host.disabled.append(point.name)
                continue
            host.load_entry_point(point)
        unmatched = sorted(blocked - {point.name for point in points})
        if unmatched:  # a typo would otherwise leave the plugin it meant loaded, without a word
            names = ", ".join(dict.fromkeys(point.name for point in points)) or "none"
            host.warnings.append(
                f"{DISABLE_ENV} names {', '.join(map(repr, unmatched))}, but no installed plugin has that "
                f"entry-point name, so nothing was disabled for it; the plugins are: {names}"
            )
        return host

    def load_entry_point(self, point: entrypoints.EntryPointLike) -> bool:
        """Import one entry point and register it under the entry point's name."""
        try:
            plugin = point.load()
        except PLUGIN_FAILURES as exc:  # any import failure must not take other languages down
            self._problem(point.name, "load", f"import of {point.value!r} failed: {_describe(exc)}")
            return False
        version = point.dist.version if point.dist is not None else "unknown"
        return self.register(plugin, point.name, version=version)

    def register(self, plugin: object, name: str, *, version: str = "unknown") -> bool:
        """Register ``plugin`` (a module or object with ``kandev_lsp_*`` hooks) under ``name``.

        Returns False, recording a :class:`PluginProblem`, when the plugin is invalid: a hook name no spec
        knows, an argument a spec does not have, a wrapper, or a bad or duplicate language.
        """
        if name in self._loaded or name == CORE_PLUGIN:
            self._problem(name, "load", "a plugin with this name is already loaded")
            return False
        try:
            self._pm.register(plugin, name=name)
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self._drop(plugin)
            self._problem(name, "load", _describe(exc))
            return False
        if any(impl.wrapper or impl.hookwrapper for impl in self._impls_of(plugin)):
            self._drop(plugin)
            self._problem(name, "load", "hook wrappers are not supported by kandev-lsp hooks")
            return False
        loaded = _Loaded(name, version, plugin)
        try:
            languages = self._declared_languages(plugin)
        except (TypeError, ValueError) as exc:
            self._drop(plugin)
            self._problem(name, "load", _describe(exc))
            return False
        for spec in languages:
            if spec.id in self._languages:
                self._drop(plugin)
                self._problem(
                    name,
                    "load",
                    f"language {spec.id!r} is already provided by plugin {self._owner[spec.id]!r}",
                )
                return False
        for spec in languages:
            self._languages[spec.id] = spec
            self._owner[spec.id] = name
            self._claim_lsp_ids(spec, name)
        loaded.languages = languages
        self._loaded[name] = loaded
        return True

    def _claim_lsp_ids(self, spec: LanguageSpec, plugin: str) -> None:
        """Record the LSP languageIds ``spec`` owns; warn when another language already claims one (a
        document with that id would have two servers, and whoever routes by languageId must pick one)."""
        for lsp_id in spec.language_ids:
            first = self._lsp_ids.setdefault(lsp_id, spec.id)
            if first != spec.id:
                warning = (
                    f"languageId {lsp_id!r} is claimed by language {first!r} (plugin {self._owner[first]!r}) "
                    f"and by language {spec.id!r} (plugin {plugin!r}): a client that picks a server by "
                    "languageId cannot tell which one owns these documents. Remove it from one plugin's "
                    f"language_ids, or disable one plugin with {DISABLE_ENV}."
                )
                self.warnings.append(warning)

    def _declared_languages(self, plugin: object) -> list[LanguageSpec]:
        declared: list[LanguageSpec] = []
        for impl in self._impls_of(plugin, "kandev_lsp_languages"):
            try:
                result = impl.function()
            except PLUGIN_FAILURES as exc:
                raise ValueError(f"kandev_lsp_languages raised {_describe(exc)}") from exc
            if _tracing():
                _trace_log().debug("kandev_lsp_languages %s -> %s", impl.plugin_name, type(result).__name__)
            if result is None:
                continue
            if isinstance(result, LanguageSpec) or not isinstance(result, Iterable):
                raise TypeError("kandev_lsp_languages must return a list of LanguageSpec")
            for spec in result:
                if not isinstance(spec, LanguageSpec):
                    raise TypeError(f"kandev_lsp_languages returned {type(spec).__name__}, not LanguageSpec")
                declared.append(spec)
        ids = [spec.id for spec in declared]
        if len(ids) != len(set(ids)):
            raise ValueError(f"the plugin declares a language twice: {sorted(ids)}")
        return declared

    def _impls_of(self, plugin: object, hook: str | None = None) -> list[pluggy.HookImpl]:
        callers = self._pm.get_hookcallers(plugin) or []
        return [
            impl
            for caller in callers
            if hook is None or caller.name == hook
            for impl in caller.get_hookimpls()
            if impl.plugin is plugin
        ]

    def _drop(self, plugin: object) -> None:
        if self._pm.is_registered(plugin):
            self._pm.unregister(plugin)

    def _problem(self, plugin: str, phase: str, error: str) -> None:
        """Record a problem. One found while loading is the loader's to report (from :attr:`problems`,
        in its own words: the CLI's warning lines, ``plugins``, ``doctor``); logging it as well printed
        it twice, once through logging's last-resort handler. One raised by a hook later has nobody
        else to tell, so it is logged as a warning. The same problem again (a broken hook fails on every
        call, and ``serve`` and ``mcp`` call hooks per session) is neither kept nor logged twice."""
        problem = PluginProblem(plugin, phase, error)
        if problem in self.problems:
            return
        self.problems.append(problem)
        if phase != "load":
            _trace_log().warning("%s", problem)
        elif _tracing():
            _trace_log().debug("%s", problem)

    # Introspection -----------------------------------------------------------------------------------
    def languages(self) -> dict[str, LanguageSpec]:
        """Every loaded language by id, sorted."""
        return dict(sorted(self._languages.items()))

    def language(self, language_id: str) -> LanguageSpec:
        try:
            return self._languages[language_id]
        except KeyError:
            raise UnknownLanguageError(language_id, sorted(self._languages)) from None

    def plugin_of(self, language_id: str) -> str:
        """The name of the plugin that declares ``language_id``."""
        return self._owner[language_id]

    def plugins(self) -> list[PluginInfo]:
        infos = []
        for loaded in self._loaded.values():
            hooks = sorted(
                {impl_caller.name for impl_caller in self._pm.get_hookcallers(loaded.plugin) or []}
            )
            module = getattr(loaded.plugin, "__name__", type(loaded.plugin).__qualname__)
            infos.append(
                PluginInfo(
                    loaded.name, loaded.version, module, tuple(hooks), tuple(s.id for s in loaded.languages)
                )
            )
        return sorted(infos, key=lambda info: info.name)

    # Isolated hook calls -----------------------------------------------------------------------------
    def _call(self, hook: str, kwargs: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """Call each implementation of ``hook`` in pluggy's order, skipping (and recording) failures."""
        caller: pluggy.HookCaller = getattr(self._pm.hook, hook)
        for impl in reversed(caller.get_hookimpls()):
            name = impl.plugin_name
            try:
                result = impl.function(*[kwargs[arg] for arg in impl.argnames])
            except PLUGIN_FAILURES as exc:
                self._problem(name, hook, _describe(exc))
                continue
            if _tracing():
                _trace_log().debug("%s %s -> %s", hook, name, type(result).__name__)
            if result is not None:
                yield name, result

    def _first(self, hook: str, kwargs: Mapping[str, Any]) -> Any:
        for _, result in self._call(hook, kwargs):
            return result
        return None

    def _mappings(self, hook: str, kwargs: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each implementation's mapping result as a dict, in :meth:`_call`'s order; any other value (a
        plugin's ``return "abc"``) is recorded against its plugin and skipped, as a raise would be, rather
        than failing the command that asked (``config`` printed a traceback for a bad default_settings)."""
        for name, result in self._call(hook, kwargs):
            if isinstance(result, Mapping):
                yield name, dict(result)
            else:
                self._problem(name, hook, f"returned {type(result).__name__}, not a mapping; ignored")

    def _guarded(self, name: str, hook: str, items: Iterable[Any]) -> Iterator[Any]:
        """Iterate a plugin's lazy result; an exception mid-way is recorded and ends that plugin's part."""
        try:
            yield from items
        except PLUGIN_FAILURES as exc:
            self._problem(name, hook, _describe(exc))

    # Typed facade: one method per hook --------------------------------------------------------------
    def discover(self, language: LanguageSpec, task: Task) -> Iterator[Candidate]:
        """All candidates for ``language``, plugins first, the core's default discovery last."""
        hook = "kandev_lsp_discover"
        for name, result in self._call(hook, {"language": language, "task": task}):
            label = "" if name == CORE_PLUGIN else f"plugin {name}: "
            reported = False
            for candidate in self._guarded(name, hook, result):
                if isinstance(candidate, Candidate):
                    yield replace(candidate, source=label + candidate.source) if label else candidate
                elif not reported:  # once per call; a path given as a bare str was dropped without a word
                    reported = True
                    kind = type(candidate).__name__
                    self._problem(
                        name, hook, f"gave a {kind}, not a Candidate; ignored (and any more like it)"
                    )

    def check_candidate(self, language: LanguageSpec, path: str, task: Task) -> str | None:
        """The first rejection reason any plugin gives for ``path``, or None when it may serve."""
        for name, reason in self._call(
            "kandev_lsp_check_candidate", {"language": language, "path": path, "task": task}
        ):
            return f"{reason} (checked by {name})"
        return None

    def installer_available(self, language: LanguageSpec, host: HostPlatform) -> bool:
        return bool(self._first("kandev_lsp_installer_available", {"language": language, "host": host}))

    def default_settings(self, language: LanguageSpec) -> dict[str, Any]:
        results = [r for _, r in self._mappings("kandev_lsp_default_settings", {"language": language})]
        merged: dict[str, Any] = {}
        for result in reversed(results):
            merged.update(result)
        return merged

    def initialization_options(
        self, language: LanguageSpec, settings: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        hook = "kandev_lsp_initialization_options"
        for _, result in self._mappings(hook, {"language": language, "settings": settings}):
            return result
        return None

    def configuration_item(
        self, language: LanguageSpec, settings: Mapping[str, Any], section: str | None, scope_uri: str | None
    ) -> Any:
        """The answer to one ``workspace/configuration`` item."""
        answer = self._first(
            "kandev_lsp_configuration_item",
            {"language": language, "settings": settings, "section": section, "scope_uri": scope_uri},
        )
        return answer.value if isinstance(answer, ConfigurationAnswer) else None

    def suppressed_providers(self, language: LanguageSpec, capabilities: Mapping[str, Any]) -> frozenset[str]:
        hook = "kandev_lsp_suppressed_providers"
        united: set[str] = set()
        for name, result in self._call(hook, {"language": language, "capabilities": capabilities}):
            united.update(str(item) for item in self._guarded(name, hook, result))
        return frozenset(united)

    def readiness(self, language: LanguageSpec) -> Readiness:
        """When a server of ``language`` gives complete answers: a plugin's override, else the declaration."""
        result = self._first("kandev_lsp_readiness", {"language": language})
        return result if isinstance(result, Readiness) else language.readiness

    def client_capabilities(self, language: LanguageSpec) -> dict[str, Any]:
        """The client capabilities ``language`` adds: its declaration, then the hooks' (deep-merged)."""
        from kandev_lsp.lsp.capabilities import merge_capabilities

        merged = merge_capabilities({}, language.client_capabilities)
        results = [r for _, r in self._mappings("kandev_lsp_client_capabilities", {"language": language})]
        for result in reversed(results):
            merged = merge_capabilities(merged, result)
        return merged

    def language_id(self, language: LanguageSpec, path: str) -> str | None:
        """The ``languageId`` ``path`` opens with on a server of ``language`` (None: not its file)."""
        result = self._first("kandev_lsp_language_id", {"language": language, "path": path})
        return result if isinstance(result, str) else language.language_id_for(path)
