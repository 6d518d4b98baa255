"""Webhook benchmark (issue 39): the same validating and mutating admission webhook for
Websites written with kcontrol (bench/webhooks/kcontrol_webhooks.py: ``AdmissionWebhook``
through the builder's ``webhook_managed_by(manager).for_(...).with_defaulter(...)
.with_validator(...)``) and with kopf (bench/webhooks/kopf_webhooks.py: ``@kopf.on.mutate``,
``@kopf.on.validate``), side by side on envtest, both at their defaults.

The webhooks, identical on both sides - examples/website/webhooks.py's defaulter and
validator (its conversion and the Website controller left out: neither is measured): a
Website without ``spec.replicas`` gets 1; one whose image has no tag or digest, or whose
replicas are not 0 to 20, is refused with 422 (a warning above 10 replicas).

Each run (``--runs`` per size, the sides alternating which goes first) gets a fresh control
plane (etcd + kube-apiserver, kcontrol.envtest) with the Website CRD
(examples/website/crd.yaml) established; the webhook server is started as its own process
with the administrator's kubeconfig, in managed mode - it applies a
MutatingWebhookConfiguration and a ValidatingWebhookConfiguration pointing the API server at
itself with its self-signed certificate as the bundle (bench/webhooks/_sides.py: kcontrol's
``--webhook-install-url``, kopf's ``settings.admission.managed``; kopf is given a
self-signed pair, as its own generator needs ``certbuilder``, which is not installed). It is
ready once a probe Website is stored defaulted and an unpinned one is denied. Then N creates
(``--creates``, default 200) are sent at once by the benchmark's own unthrottled client
(``asyncio.gather``), every 4th with an unpinned image, so a quarter are denied.

Measured over the load (bench/webhooks/_run.py):

- admission latency as the API server measures it: the
  ``apiserver_admission_webhook_admission_duration_seconds`` histogram scraped from its
  ``/metrics`` before and after the load, the growth of its buckets per webhook type
  (``admit``: mutating, ``validating``), p50 and p99 interpolated as Prometheus's
  ``histogram_quantile`` does (bench/webhooks/_histogram.py), and the exact mean from
  ``_sum`` / ``_count``;
- the webhook process's CPU-seconds (user + sys of every thread, ``/proc/<pid>/stat``) from
  the first create sent to the last answered; kube-apiserver + etcd CPU over the same window;
- each create's time as the client saw it (p50, p99), and the load's wall time;
- lines of each webhook's source (bench/operator/_lines.py's count: non-blank lines holding
  code, docstrings and comments free).

The run fails loudly unless the webhooks did their work: every valid create answered with
its replicas defaulted, every invalid one refused with 422 by the validator, the namespace
holding exactly the valid Websites answered, all defaulted, and the histogram counting a call
of each type for every create allowed or denied. A create that fails otherwise - a webhook
call that failed, which the API server answers with 500 - is a failure under load, not a
misconfiguration: it is counted and reported (``failed creates``), and a side with any does
not meet the issue's bar whatever its latency.

Caveats: the API server's buckets are coarse (5, 25, 100, 500 ms, 1 s, ...): a p99 is an
interpolation inside one of them, and two sides whose p99 fall into the same bucket differ
only by how their counts split it - read the mean beside it. A burst of N concurrent creates
makes the API server open about one connection to the webhook server per call in flight: the
mutating calls, first, carry most of those TLS handshakes, the validating calls mostly reuse
the connections (the probes open only a few beforehand). 200 creates are a short burst
(well under a second of webhook CPU), measured at clock-tick resolution (10 ms). The machine
has 2 cores shared by etcd, kube-apiserver, the webhook server, this script and other
people's work; the load average at each run's start is recorded. kopf answers every
operation (its default ``operations``), kcontrol's configuration CREATE and UPDATE; only
creates are sent.

Usage (from the repository root)::

    .venv/bin/python -m bench.webhooks --creates 100,200 --runs 5 \\
        --out bench/results/tables/webhooks.md --json bench/results/webhooks.json
"""
