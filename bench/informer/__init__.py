"""Informer benchmark (benchmarks.md, scenarios 2 and 3): cold sync and watch throughput.

For each N in ``--pods`` (default 10,000 and 50,000) a fresh control plane (etcd +
kube-apiserver from kcontrol.envtest) is started and N realistic pods
(bench/_pods.py: ~3.9 KB of JSON each as stored, 1.6 KB of it managedFields) are created in
namespace ``bench`` with ``ApiClient(qps=0)`` and 32 concurrent creates. The pods have no node and stay Pending. Then, ``--runs`` times, each
variant runs as its own process (so its RSS is its own), kcontrol and client-go alternating:

==========================  =================================================================
variant                     what runs
==========================  =================================================================
``kcontrol``                kcontrol SharedInformerFactory pod informer, default settings
                            (LIST with limit=500 at resourceVersion 0 - which the apiserver
                            answers from its watch cache in one piece - then watch; gzip;
                            fieldsV1 kept raw; short strings interned)
``client-go``               client-go v0.36 SharedInformerFactory pod informer
                            (bench/reference/informer), default settings: JSON, and the
                            streaming list (WatchListClient is on by default since v0.35)
``kcontrol trim``           as ``kcontrol`` with a transform dropping metadata.managedFields
``client-go trim``          as ``client-go`` with the same transform (kube-controller-manager
                            installs exactly this one)
``kcontrol no-intern``      kcontrol with ``ReflectorOptions(intern_strings=False)``
``kcontrol no-gzip``        kcontrol with ``ClientConfig(disable_compression=True)``: no gzip,
                            as the official client (urllib3 does not ask for it)
``kcontrol watch-list``     kcontrol with ``ReflectorOptions(use_watch_list=True)``
``client-go LIST``          client-go with ``KUBE_FEATURE_WatchListClient=false``
``kcontrol watch-list trim``  streaming list with the managedFields transform
``kcontrol manager``        as kcontrol-manager runs its informers: ``strip_managed_fields``
                            (and the default interning), and the sync settled with
                            ``gc.freeze()`` (``set_gc_freeze_after_sync``)
``client-go kcm``           client-go as kube-controller-manager configures it: protobuf,
                            ``DisableCompression``, and the managedFields transform
``official``                the official client's ``kubernetes.informer.SharedInformer`` over
                            ``CoreV1Api.list_pod_for_all_namespaces`` (threads, urllib3,
                            typed models; one unpaged LIST). Capped by ``--slow-timeout``.
``asyncio models``          bare kubernetes_asyncio: ``list_pod_for_all_namespaces`` paged 500
                            at resourceVersion 0 into a dict, generated models (what users of
                            that library get); no watch is started
``aiohttp floor``           one aiohttp session GETting the same LIST (limit=500,
                            resourceVersion=0: one response) and discarding the bytes
==========================  =================================================================

Every informer process also runs once against an empty namespace; ``RSS/pod`` is (VmRSS at
sync - VmRSS of that empty run) / N. ``settled`` is the same after a full collection and
giving free memory back (Go: runtime.GC + debug.FreeOSMemory; Python: gc.collect +
malloc_trim(0)). ``wall`` and ``CPU`` run from the start of the measured program's main (after
the interpreter's imports, reported apart as ``import CPU``) to has_synced.

Watch throughput: kcontrol (default, and as kcontrol-manager runs it) and client-go
informers (default settings) sync, then a writer process (``ApiClient(qps=0)``,
``--writer-concurrency`` merge patches in flight) patches an annotation holding its clock on
the pods for ``--churn-seconds``; all three informers watch at the same time, on the same
event stream, and count the update events their handler receives, the CPU they use, and the
delay from the writer's timestamp to the handler call.

Usage (from the repository root)::

    .venv/bin/python -m bench.informer [--pods 10000,50000] [--runs 3] [--write results.md] \\
        [--json bench/results/informer.json]

Other flags: ``--variants`` (comma list), ``--slow-runs`` (runs that include the official and
asyncio-models variants), ``--slow-timeout``, ``--churn-seconds`` (0: skip), ``--dump``
(raw measurements as JSON), ``--load DUMP`` (render the tables and the results file from an
earlier ``--dump`` instead of measuring).

The package, one module per measured program: ``_kcontrol`` (the kcontrol informer child),
``_client_go`` (how the Go program ``bench/reference/informer`` is run), ``_official`` (the
official client's informer child), ``_floors`` (bare kubernetes_asyncio and the raw
download), ``_writer`` (the churn writer); ``_child`` is what the children share (the
``RESULT`` line they print, their clock); ``_variants`` names what is measured,
``_orchestrate`` runs it, ``_report`` turns the measurements into Markdown and
``bench/results/informer.json``.
"""
