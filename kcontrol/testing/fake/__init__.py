"""An in-memory API server for unit tests (client-go's fake clientset and ``testing``
package, controller-runtime's ``client/fake``).

- :class:`FakeClient` implements :class:`~kcontrol.client.Client`: every request is recorded
  as an :class:`Action`, offered to the registered reactors (a :data:`Reactor` returns a
  :class:`ReactorResult` to answer it, or None to pass it on), and otherwise served by an
  :class:`ObjectTracker`; :meth:`FakeClient.metadata_only` is its
  :class:`FakeMetadataClient` view.
- :class:`ObjectTracker` is the fake server's storage and write rules: resourceVersions,
  generations, status subresources, preconditions, finalizers, selectors, pagination,
  watches, patches, and server-side apply with ``managedFields``. CRDs are served from their
  definitions (:func:`kcontrol.envtest.load_crds` reads them), schemas included.
- :class:`FakeRecorder` keeps events as client-go's ``record.FakeRecorder`` formats them.

The root :mod:`kcontrol.testing` re-exports the names most tests use.
"""

from kcontrol.testing.fake._actions import Action, Reactor, ReactorResult
from kcontrol.testing.fake._client import FakeClient
from kcontrol.testing.fake._metadata import FakeMetadataClient
from kcontrol.testing.fake._recorder import FakeRecorder
from kcontrol.testing.fake._tracker import ObjectTracker

__all__ = [
    "Action",
    "FakeClient",
    "FakeMetadataClient",
    "FakeRecorder",
    "ObjectTracker",
    "Reactor",
    "ReactorResult",
]
