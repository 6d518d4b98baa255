"""Reading kubeconfig files with the rules of client-go's ``tools/clientcmd``.

Which files: the one named explicitly, else each file of ``$KUBECONFIG`` (a list separated by
:data:`os.pathsep`; empty names and repeats are dropped), else ``~/.kube/config``. Files of the
list that do not exist are skipped; when none exists, :class:`~kcontrol.errors.ConfigError`.

Merging, as clientcmd does it: the first file to set a value or a map key wins, and a later
file never changes it - the first ``current-context`` that is set is the one used, and a
cluster, user or context is taken whole from the first file that defines its name.

Paths in a file (``certificate-authority``, ``client-certificate``, ``client-key``,
``tokenFile``, and an exec plugin's ``command`` when it holds a path separator) are relative
to the directory of the file that defines them. ``*-data`` fields are base64; they are
decoded here.

Validation is clientcmd's too: a file whose fields have the wrong types (or undecodable
``*-data``) breaks the whole load, while the semantic checks - a server, a key for the
certificate, one authentication method, a usable exec plugin - apply only to the context in
use, its cluster and its user. A context naming a user that no file defines connects without
credentials (clientcmd's rule; a warning is logged); one naming an undefined cluster is an
error. Every error is one line that names the file.

Everything here blocks (file reads, YAML parsing): callers run it in a worker thread. PyYAML
is imported on the first read: a process configured in-cluster never needs it.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client._config import _reason
from kcontrol.errors import ConfigError
from kcontrol.logging import get_logger

__all__ = [
    "EXEC_API_VERSIONS",
    "EXEC_CLUSTER_EXTENSION",
    "KUBECONFIG_ENV",
    "RECOMMENDED_HOME_FILE",
    "Cluster",
    "Context",
    "ExecConfig",
    "KubeConfig",
    "Selection",
    "User",
    "kubeconfig_paths",
    "read_kubeconfig",
]

_log = get_logger(__name__)

KUBECONFIG_ENV = "KUBECONFIG"
"""The environment variable listing kubeconfig files (separated by :data:`os.pathsep`)."""

RECOMMENDED_HOME_FILE = os.path.join("~", ".kube", "config")
"""The kubeconfig read when none is named and ``$KUBECONFIG`` is unset."""

EXEC_API_VERSIONS = frozenset(
    {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}
)
"""The ExecCredential versions an exec plugin may speak (client-go dropped v1alpha1)."""

EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"
"""The cluster extension handed to an exec plugin as ``spec.cluster.config``."""

_INTERACTIVE_MODES = frozenset({"Never", "IfAvailable", "Always"})


@dataclass(frozen=True, slots=True)
class ExecConfig:
    """A user's ``exec`` credential plugin (``command`` resolved as clientcmd does: against
    the kubeconfig's directory when it holds a path separator, else looked up on ``PATH``)."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = ""


@dataclass(frozen=True, slots=True)
class Cluster:
    """A ``clusters`` entry; ``source`` is the file that defined it. Paths are absolute,
    ``*-data`` decoded; an unset string is ``None``."""

    name: str
    source: str
    server: str | None = None
    certificate_authority: str | None = None
    certificate_authority_data: bytes | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    disable_compression: bool = False
    exec_extension: object = None  # the EXEC_CLUSTER_EXTENSION extension, as parsed


@dataclass(frozen=True, slots=True)
class User:
    """A ``users`` entry (clientcmd's AuthInfo); ``source`` is the file that defined it.
    Paths are absolute, ``*-data`` decoded; an unset string is ``None``. Secrets are kept
    out of ``repr``."""

    name: str
    source: str
    token: str | None = field(default=None, repr=False)
    token_file: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    client_certificate: str | None = None
    client_certificate_data: bytes | None = None
    client_key: str | None = None
    client_key_data: bytes | None = field(default=None, repr=False)
    exec: ExecConfig | None = None
    auth_provider: str | None = None
    impersonates: bool = False  # any of as, as-uid, as-groups, as-user-extra is set

    @property
    def has_client_certificate(self) -> bool:
        return bool(self.client_certificate or self.client_certificate_data)


@dataclass(frozen=True, slots=True)
class Context:
    """A ``contexts`` entry: which cluster, as which user (``None``: anonymous)."""

    name: str
    source: str
    cluster: str | None = None
    user: str | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    """What a client uses: the context, its cluster and its user (``None``: anonymous)."""

    context: Context
    cluster: Cluster
    user: User | None


@dataclass(frozen=True, slots=True)
class KubeConfig:
    """The merge of the kubeconfig files read (see the module docstring for the rules).

    ``description`` names the files for messages (as they were listed).
    """

    description: str
    clusters: Mapping[str, Cluster]
    users: Mapping[str, User]
    contexts: Mapping[str, Context]
    current_context: str | None

    def select(self, context: str | None = None) -> Selection:
        """The context ``context`` (default: ``current-context``) with its cluster and user,
        checked as clientcmd checks the configuration it is about to use.

        Raises :class:`ConfigError` when no context is named, it or its cluster is not
        defined, or the cluster or user is not usable (no server is not checked here: a
        caller may override the server).
        """
        name = context or self.current_context
        if not name:
            raise ConfigError(
                f"kubeconfig {self.description} sets no current-context and no context was given"
            )
        selected = self.contexts.get(name)
        if selected is None:
            raise ConfigError(f'kubeconfig {self.description} has no context "{name}"')
        if not selected.cluster:
            raise _malformed(selected.source, f'context "{name}" names no cluster')
        cluster = self.clusters.get(selected.cluster)
        if cluster is None:
            raise ConfigError(
                f'kubeconfig {self.description} has no cluster "{selected.cluster}" '
                f'(of context "{name}")'
            )
        user = self.users.get(selected.user) if selected.user else None
        if selected.user and user is None:
            _log.warning(
                "the kubeconfig context names a user no kubeconfig defines; "
                "connecting without credentials",
                kubeconfig=self.description,
                context=name,
                user=selected.user,
            )
        if user is not None:
            _check_user(user)
        return Selection(selected, cluster, user)


def kubeconfig_paths(explicit: str | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The kubeconfig files to read: ``[explicit]`` when given (one file, as clientcmd's
    explicit path), else ``$KUBECONFIG``'s list without empty names and repeats, else
    ``~/.kube/config`` if it exists, else ``[]``."""
    if explicit:
        return [explicit]
    env = os.environ if environ is None else environ
    listed = env.get(KUBECONFIG_ENV, "")
    if listed:
        return list(dict.fromkeys(p for p in listed.split(os.pathsep) if p))
    home = os.path.expanduser(RECOMMENDED_HOME_FILE)
    return [home] if os.path.exists(home) else []


def read_kubeconfig(paths: Sequence[str]) -> KubeConfig:
    """Read, check and merge the kubeconfig files ``paths`` (``~`` expanded). Blocking.

    Files that do not exist are skipped. Raises :class:`ConfigError` naming the file when
    none exists, or one cannot be read, is not YAML, is empty, is not a mapping, or has a
    field of the wrong type or undecodable ``*-data``.
    """
    description = os.pathsep.join(paths)
    existing = [p for p in paths if os.path.exists(os.path.expanduser(p))]
    if not existing:
        raise ConfigError(f"kubeconfig {description} does not exist")
    clusters: dict[str, Cluster] = {}
    users: dict[str, User] = {}
    contexts: dict[str, Context] = {}
    current_context: str | None = None
    for path in existing:
        document = _read_document(path)
        parser = _FileParser(path)
        for name, body in parser.entries(document, "clusters", "cluster"):
            clusters.setdefault(name, parser.cluster(name, body))
        for name, body in parser.entries(document, "users", "user"):
            users.setdefault(name, parser.user(name, body))
        for name, body in parser.entries(document, "contexts", "context"):
            contexts.setdefault(name, parser.context(name, body))
        current_context = current_context or parser.string(document, "current-context", "")
    return KubeConfig(description, clusters, users, contexts, current_context)


# -- one file ---------------------------------------------------------------------------------


def _read_document(path: str) -> dict[str, Any]:
    """The YAML mapping in ``path``; :class:`ConfigError` naming it otherwise."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"kubeconfig {path} cannot be read: {_reason(e)}") from e
    document = _parse_yaml(path, text)
    if document is None:
        raise ConfigError(f"kubeconfig {path} is empty")
    if not isinstance(document, dict):
        raise ConfigError(
            f"kubeconfig {path} is not a kubeconfig: the document is a "
            f"{type(document).__name__}, not a mapping"
        )
    return document


def _parse_yaml(path: str, text: str) -> Any:
    """The YAML document ``text`` with a safe loader: libyaml's when PyYAML was built with it
    (several times faster); on an error the pure-Python parser's, whose positions are exact,
    as :class:`ConfigError` naming ``path``."""
    import yaml  # noqa: PLC0415 - needed by kubeconfig users only

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"kubeconfig {path} is not valid YAML: {_yaml_problem(e)}") from e


class _FileParser:
    """Turns the entries of one kubeconfig file into :class:`Cluster`, :class:`User` and
    :class:`Context`, resolving relative paths against the file's directory. Every type
    error raises :class:`ConfigError` saying where (``cluster "c": server ...``)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._base = os.path.dirname(os.path.abspath(os.path.expanduser(path)))

    def entries(
        self, document: Mapping[str, Any], key: str, inner: str
    ) -> list[tuple[str, dict[str, Any]]]:
        """The ``(name, body)`` pairs of the list ``key`` (``clusters``: ``name`` and
        ``cluster``); a ``null`` body is empty, a repeated name malformed."""
        value = document.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._error(f"{key} is a {type(value).__name__}, not a list")
        found: dict[str, dict[str, Any]] = {}
        for index, item in enumerate(value):
            where = f"{key}[{index}]"
            if not isinstance(item, dict):
                raise self._error(f"{where} is a {type(item).__name__}, not a mapping")
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise self._error(f"{where} has no name")
            if name in found:
                raise self._error(f'{key} has two entries named "{name}"')
            body = item.get(inner)
            if body is None:
                body = {}
            if not isinstance(body, dict):
                raise self._error(f'{inner} "{name}" is a {type(body).__name__}, not a mapping')
            found[name] = body
        return list(found.items())

    def cluster(self, name: str, body: Mapping[str, Any]) -> Cluster:
        where = f'cluster "{name}"'
        return Cluster(
            name=name,
            source=self._path,
            server=self.string(body, "server", where),
            certificate_authority=self.path(body, "certificate-authority", where),
            certificate_authority_data=self.data(body, "certificate-authority-data", where),
            insecure_skip_tls_verify=self.boolean(body, "insecure-skip-tls-verify", where),
            tls_server_name=self.string(body, "tls-server-name", where),
            proxy_url=self.string(body, "proxy-url", where),
            disable_compression=self.boolean(body, "disable-compression", where),
            exec_extension=self._extension(body, EXEC_CLUSTER_EXTENSION, where),
        )

    def user(self, name: str, body: Mapping[str, Any]) -> User:
        where = f'user "{name}"'
        provider = body.get("auth-provider")
        if provider is not None and not isinstance(provider, dict):
            raise self._error(f"{where}: auth-provider is a {type(provider).__name__}")
        exec_body = body.get("exec")
        if exec_body is not None and not isinstance(exec_body, dict):
            raise self._error(f"{where}: exec is a {type(exec_body).__name__}, not a mapping")
        return User(
            name=name,
            source=self._path,
            token=self.string(body, "token", where),
            token_file=self.path(body, "tokenFile", where),
            username=self.string(body, "username", where),
            password=self.string(body, "password", where),
            client_certificate=self.path(body, "client-certificate", where),
            client_certificate_data=self.data(body, "client-certificate-data", where),
            client_key=self.path(body, "client-key", where),
            client_key_data=self.data(body, "client-key-data", where),
            exec=self._exec(exec_body, where) if exec_body else None,
            auth_provider=self._provider_name(provider, where),
            impersonates=any(body.get(k) for k in ("as", "as-uid", "as-groups", "as-user-extra")),
        )

    def context(self, name: str, body: Mapping[str, Any]) -> Context:
        where = f'context "{name}"'
        return Context(
            name=name,
            source=self._path,
            cluster=self.string(body, "cluster", where),
            user=self.string(body, "user", where),
        )

    def _exec(self, body: Mapping[str, Any], where: str) -> ExecConfig:
        where = f"{where}: exec"
        command = self.string(body, "command", where) or ""
        if os.sep in command and not os.path.isabs(command):
            command = os.path.join(self._base, command)
        env: list[tuple[str, str]] = []
        raw_env = body.get("env") or []
        if not isinstance(raw_env, list):
            raise self._error(f"{where}: env is a {type(raw_env).__name__}, not a list")
        for index, item in enumerate(raw_env):
            if not isinstance(item, dict):
                raise self._error(f"{where}: env[{index}] is not a mapping")
            env_name = self.string(item, "name", f"{where}: env[{index}]")
            if not env_name:
                raise self._error(f"{where}: env[{index}] has no name")
            env.append((env_name, self.string(item, "value", f"{where}: env[{index}]") or ""))
        return ExecConfig(
            api_version=self.string(body, "apiVersion", where) or "",
            command=command,
            args=tuple(self.strings(body, "args", where)),
            env=tuple(env),
            install_hint=self.string(body, "installHint", where) or "",
            provide_cluster_info=self.boolean(body, "provideClusterInfo", where),
            interactive_mode=self.string(body, "interactiveMode", where) or "",
        )

    def _provider_name(self, provider: Mapping[str, Any] | None, where: str) -> str | None:
        """The ``auth-provider``'s name, ``(unnamed)`` without one; ``None`` when unset."""
        if not provider:
            return None
        return self.string(provider, "name", f"{where}: auth-provider") or "(unnamed)"

    def _extension(self, body: Mapping[str, Any], name: str, where: str) -> object:
        extensions = body.get("extensions") or []
        if not isinstance(extensions, list):
            raise self._error(f"{where}: extensions is a {type(extensions).__name__}")
        for item in extensions:
            if isinstance(item, dict) and item.get("name") == name:
                return item.get("extension")
        return None

    # -- fields

    def string(self, body: Mapping[str, Any], key: str, where: str) -> str | None:
        """``body[key]``, a string; unset and ``""`` are ``None`` (Go's zero value)."""
        value = body.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            prefix = f"{where}: " if where else ""
            raise self._error(f"{prefix}{key} is a {type(value).__name__}, not a string")
        return value

    def strings(self, body: Mapping[str, Any], key: str, where: str) -> list[str]:
        value = body.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._error(f"{where}: {key} is not a list of strings")
        return value

    def boolean(self, body: Mapping[str, Any], key: str, where: str) -> bool:
        value = body.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self._error(f"{where}: {key} is a {type(value).__name__}, not a boolean")
        return value

    def path(self, body: Mapping[str, Any], key: str, where: str) -> str | None:
        """A file name, made absolute against the file's directory (``~`` is not expanded,
        as in clientcmd)."""
        value = self.string(body, key, where)
        if value is None or os.path.isabs(value):
            return value
        return os.path.join(self._base, value)

    def data(self, body: Mapping[str, Any], key: str, where: str) -> bytes | None:
        """A ``*-data`` field: base64 (line breaks allowed), decoded."""
        value = self.string(body, key, where)
        if value is None:
            return None
        try:
            return base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError) as e:
            raise self._error(f"{where}: {key} is not valid base64 ({_reason(e)})") from e

    def _error(self, problem: str) -> ConfigError:
        return _malformed(self._path, problem)


# -- checks of the user in use ------------------------------------------------------------------


def _check_user(user: User) -> None:
    """clientcmd's checks of the user a client is about to use; :class:`ConfigError`."""
    where = f'user "{user.name}"'
    if user.auth_provider is not None:
        raise ConfigError(
            f"kubeconfig {user.source}: {where} uses the auth-provider "
            f'"{user.auth_provider}", which kcontrol does not support; use an exec '
            "credential plugin (kubectl's, e.g. kubelogin or gke-gcloud-auth-plugin) instead"
        )
    if user.impersonates:
        raise ConfigError(
            f"kubeconfig {user.source}: {where} impersonates another user (as, as-groups, "
            "as-uid or as-user-extra), which kcontrol does not support"
        )
    if user.token and (user.username or user.password):
        raise ConfigError(
            f"kubeconfig {user.source}: {where} has more than one authentication method "
            "(token and username/password); only one is allowed"
        )
    has_key = bool(user.client_key or user.client_key_data)
    if user.has_client_certificate and not has_key:
        raise _malformed(user.source, f"{where} has a client certificate but no client key")
    if has_key and not user.has_client_certificate:
        raise _malformed(user.source, f"{where} has a client key but no client certificate")
    if user.exec is not None:
        _check_exec(user.exec, user.source, where)


def _check_exec(config: ExecConfig, source: str, where: str) -> None:
    if not config.command:
        raise _malformed(source, f"{where}: exec has no command")
    if not config.api_version:
        raise _malformed(source, f"{where}: exec has no apiVersion")
    if config.api_version not in EXEC_API_VERSIONS:
        raise ConfigError(
            f"kubeconfig {source}: {where}: exec apiVersion {config.api_version} is not "
            f"supported (use one of {', '.join(sorted(EXEC_API_VERSIONS))})"
        )
    if config.interactive_mode and config.interactive_mode not in _INTERACTIVE_MODES:
        raise _malformed(
            source,
            f"{where}: exec interactiveMode {config.interactive_mode!r} is not one of "
            f"{', '.join(sorted(_INTERACTIVE_MODES))}",
        )
    if config.interactive_mode == "Always":
        raise ConfigError(
            f"kubeconfig {source}: {where}: the exec plugin needs an interactive terminal "
            "(interactiveMode: Always), which a controller does not have"
        )


# -- messages -----------------------------------------------------------------------------------


def _malformed(path: str, problem: str) -> ConfigError:
    return ConfigError(f"kubeconfig {path} is malformed: {problem}")


def _yaml_problem(error: Exception) -> str:
    """One line: what the YAML parser found and where (1-based line and column)."""
    import yaml  # noqa: PLC0415 - see _parse_yaml

    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())
