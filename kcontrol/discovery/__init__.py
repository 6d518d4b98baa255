"""Discovery and REST mapping: what the API server serves, and which resource serves a kind.

- :class:`DiscoveryClient` reads the server's discovery documents (aggregated discovery when
  the server serves it, the legacy per-group-version documents otherwise): groups and their
  preferred versions, and each group version's resources.
- :class:`RESTMapper` maps an object's ``apiVersion`` and ``kind`` to the
  :class:`~kcontrol.client.Resource` to send requests to (and back, from a plural).
  :class:`DynamicRESTMapper` does it from discovery, cached and re-read on a miss, so a CRD
  installed after start is found; :class:`StaticRESTMapper` from a fixed list, for tests.
  Both raise :class:`~kcontrol.errors.NoKindMatch` for a kind nothing serves.

The common built-in resources need no discovery: they are constants of
:mod:`kcontrol.client` (``SERVICES``, ``STATEFULSETS``, ... and ``BUILTIN_RESOURCES``)::

    mapper = DynamicRESTMapper(client)
    websites = await mapper.resource_for("demo.example.com/v1", "Website")
"""

from kcontrol.discovery._client import DiscoveryClient, RawReader
from kcontrol.discovery._documents import APIGroup, ServerResources
from kcontrol.discovery._dynamic import DynamicRESTMapper
from kcontrol.discovery._restmapper import RESTMapper, StaticRESTMapper
from kcontrol.errors import NoKindMatch, NoResourceMatch

__all__ = [
    "APIGroup",
    "DiscoveryClient",
    "DynamicRESTMapper",
    "NoKindMatch",
    "NoResourceMatch",
    "RESTMapper",
    "RawReader",
    "ServerResources",
    "StaticRESTMapper",
]
