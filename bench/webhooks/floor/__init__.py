"""Where the webhook server's CPU goes per admission call (issue 39): the TLS handshake of a
new connection against the request itself, measured on kcontrol's side of bench/webhooks.

The API server calls a webhook behind a Service over HTTP/1.1 (it opens one connection per
call in flight and keeps 25 idle per host, client-go's default), so a burst of N calls costs
up to N TLS handshakes on the webhook's side, whatever serves it. Here the caller is a small
Go program (``client.go``: net/http and crypto/tls, HTTP/1.1 only, 25 idle connections - the
API server's stack) so that the handshakes are the ones kube-apiserver would make, and the
server is bench/webhooks' kcontrol side (the same defaulter and validator, kcontrol's
``WebhookServer`` at its defaults, on uvloop) in a process of its own. For each webhook:

1. **new connections**: ``--rounds`` client processes in turn, each sending ``--burst``
   reviews at once (every call a new connection, a handshake each);
2. **kept alive**: one client process sending 25 reviews at once, ``--keepalive-rounds``
   times in a row (25 handshakes, then every call on a kept connection).

The server's CPU-seconds over each phase (``getrusage``) divided by its calls give the CPU of
a call with its handshake and without; their difference is the handshake's. Usage::

    .venv/bin/python -m bench.webhooks.floor [--burst 200 --rounds 5 --keepalive-rounds 80]

(needs Go, as hack/build-k8s.sh does). A diagnosis, not a benchmark against kopf: its
figures say how far any server on OpenSSL can go, not how kcontrol compares.
"""
