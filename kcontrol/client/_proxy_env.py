"""The proxy the environment names for a URL, as Go's ``http.ProxyFromEnvironment`` reads it
(``golang.org/x/net/http/httpproxy``), which client-go uses when a kubeconfig has no
``proxy-url``.

- ``HTTPS_PROXY`` (or ``https_proxy``) for an ``https`` URL, ``HTTP_PROXY`` (or
  ``http_proxy``) for an ``http`` one; the upper-case name wins when both are set. A value
  without a scheme is taken as ``http://``.
- Never for ``localhost`` or a loopback address.
- ``NO_PROXY`` (or ``no_proxy``): comma-separated; ``*`` turns proxying off; an IP address
  or a CIDR range matches hosts given by address; a name matches that host and its
  subdomains (``example.com`` matches ``api.example.com``), one with a leading dot (or
  ``*.``) matches subdomains only; an entry with a ``:port`` matches that port only.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["proxy_from_environment"]


def proxy_from_environment(
    url: str, environ: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """``(proxy URL, the variable that named it)`` for requests to ``url``, or ``None`` to
    connect directly (module docstring)."""
    env = os.environ if environ is None else environ
    parts = urlsplit(url)
    https = parts.scheme == "https"
    names = ("HTTPS_PROXY", "https_proxy") if https else ("HTTP_PROXY", "http_proxy")
    name = next((n for n in names if env.get(n)), None)
    if name is None:
        return None
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if https else 80)
    no_proxy = env.get("NO_PROXY") or env.get("no_proxy") or ""
    if _is_local(host) or _excluded(host, port, no_proxy):
        return None
    proxy = env[name].strip()
    if "://" not in proxy:
        proxy = "http://" + proxy
    return proxy, name


def _is_local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _excluded(host: str, port: int, no_proxy: str) -> bool:
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if "/" in entry:  # a CIDR range
            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                continue
            if address is not None and address in network:
                return True
            continue
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        try:
            entry_address = ipaddress.ip_address(entry_host.strip("[]"))
        except ValueError:
            pass
        else:  # an address matches that address only
            if entry_address == address:
                return True
            continue
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        if entry_host.startswith("."):
            if host.endswith(entry_host):
                return True
        elif host == entry_host or host.endswith("." + entry_host):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port`` -> ``(host, port)``; a bare IPv6 address has no port."""
    if entry.startswith("["):
        host, _, rest = entry.partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host + "]", int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, int(port) if port.isdigit() else None
    return entry, None
