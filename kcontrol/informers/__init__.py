"""Informers: watched, indexed, shared caches of Kubernetes objects (client-go ``tools/cache``).

- :class:`Reflector` lists and watches one collection into a store, forever, recovering from
  every failure (410 relists, 429/connection errors back off, silent watches are restarted).
- :class:`IndexedStore` is the cache (:class:`Store` / :class:`Indexer`): objects by
  ``namespace/name`` key, with a built-in ``namespace`` index and custom indexes.
- :class:`SharedIndexInformer` runs a reflector into a cache and announces every change to
  any number of event handlers (:class:`ResourceEventHandler`), each with its own buffer and
  delivery task.
- :class:`SharedInformerFactory` shares one informer per collection between controllers.
- :class:`CacheReader` answers ``get``/``list`` from those informers' caches (no API call);
  :class:`CacheScope` narrows what a factory caches of a resource.
- :class:`Lister` reads a cache by namespace, name, label selector or index.
- :func:`strip_managed_fields` and :func:`intern_strings` are transforms that shrink a cache
  (reflectors intern by default: ``ReflectorOptions.intern_strings``); a transform of one's
  own that drops ``managedFields`` says so with :func:`dropping_managed_fields`, and its
  reflector decodes faster.
- :func:`set_gc_freeze_after_sync`: how the garbage collector settles after a sync.

Objects are plain dicts shared between the cache and every reader: never mutate them.
"""

from kcontrol._gc import set_gc_freeze_after_sync
from kcontrol.errors import InactivityTimeoutError
from kcontrol.informers._backoff import BackoffManager, ExponentialBackoff
from kcontrol.informers._cache_reader import CacheReader
from kcontrol.informers._factory import SharedInformerFactory
from kcontrol.informers._fieldsets import decoding_list_items_with, dropping_managed_fields
from kcontrol.informers._keys import (
    DeletedFinalStateUnknown,
    KeyFunc,
    deleted_object,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
from kcontrol.informers._lister import LabelSelector, Lister
from kcontrol.informers._processor import (
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
)
from kcontrol.informers._reflector import (
    Reflector,
    ReflectorOptions,
    ReflectorStore,
    TransformFunc,
    WatchErrorHandler,
)
from kcontrol.informers._scope import CacheScope
from kcontrol.informers._shared_informer import (
    MINIMUM_RESYNC_PERIOD,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from kcontrol.informers._store import (
    LABEL_INDEX_PREFIX,
    NAMESPACE_INDEX,
    IndexedStore,
    Indexer,
    IndexFunc,
    Store,
    label_index,
    meta_namespace_index_func,
)
from kcontrol.informers._transforms import (
    chain_transforms,
    intern_strings,
    strip_managed_fields,
)

__all__ = [
    "LABEL_INDEX_PREFIX",
    "MINIMUM_RESYNC_PERIOD",
    "NAMESPACE_INDEX",
    "BackoffManager",
    "CacheReader",
    "CacheScope",
    "DeletedFinalStateUnknown",
    "ExponentialBackoff",
    "InactivityTimeoutError",
    "IndexFunc",
    "IndexedStore",
    "Indexer",
    "KeyFunc",
    "LabelSelector",
    "Lister",
    "Reflector",
    "ReflectorOptions",
    "ReflectorStore",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "Store",
    "TransformFunc",
    "WatchErrorHandler",
    "chain_transforms",
    "decoding_list_items_with",
    "deleted_object",
    "dropping_managed_fields",
    "intern_strings",
    "label_index",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "set_gc_freeze_after_sync",
    "split_meta_namespace_key",
    "strip_managed_fields",
    "wait_for_cache_sync",
]
