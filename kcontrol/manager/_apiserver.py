"""Waiting for the API server at start-up, as kube-controller-manager's ``WaitForAPIServer``.

A manager started together with its API server (static pods on a control-plane node), or
pointed at the wrong one, must neither act on a half-started server nor sit silent: it polls
``GET /healthz`` until the answer is 200, says in its log that it is waiting, and gives up with
:class:`~kcontrol.errors.ApiServerNotHealthy` - kcontrol-manager then exits 1 - if the server
has not answered ok within the bound. Every failure counts as "not yet": a refused connection,
a TLS error, a 5xx, and also 401/403, which a server still starting can answer for credentials
it cannot check yet; the last one is named when the wait ends.
"""

from __future__ import annotations

import asyncio

from kcontrol.client import ApiClient
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ApiServerNotHealthy, KcontrolError
from kcontrol.logging import get_logger

__all__ = ["API_SERVER_POLL_INTERVAL", "API_SERVER_WAIT_TIMEOUT", "wait_for_api_server"]

_log = get_logger(__name__)

API_SERVER_WAIT_TIMEOUT = 10.0
"""Seconds kcontrol-manager waits for ``/healthz`` at start-up (kube-controller-manager: 10 s)."""

API_SERVER_POLL_INTERVAL = 1.0
"""Seconds between two ``/healthz`` probes (``wait.PollImmediate(time.Second, ...)``)."""


async def wait_for_api_server(
    client: ApiClient,
    *,
    within: float | None = None,
    interval: float | None = None,
    clock: Clock | None = None,
) -> None:
    """Return once ``GET /healthz`` answers 200; raise :class:`ApiServerNotHealthy` if it has
    not within ``within`` seconds on ``clock`` (default :data:`API_SERVER_WAIT_TIMEOUT` and
    :data:`API_SERVER_POLL_INTERVAL`, read when called).

    The first probe is sent at once, then one every ``interval``; a probe that gets no answer
    is abandoned when the time left runs out. Logs once when the wait starts and once per
    new kind of failure, so an unreachable server is visible at once, not only at the end.
    """
    clock = clock or RealClock()
    timeout = API_SERVER_WAIT_TIMEOUT if within is None else within
    interval = API_SERVER_POLL_INTERVAL if interval is None else interval
    host = client.config.host
    deadline = clock.now() + timeout
    # The start-up lines name the server in their message: they are what an operator reads.
    _log.info(f"waiting up to {timeout:g}s for the API server at {host} to be healthy")
    last: Exception | None = None
    while (remaining := deadline - clock.now()) > 0:
        try:
            async with asyncio.timeout(remaining):
                await client.get_raw("/healthz")
        except (KcontrolError, TimeoutError) as error:
            if last is None or _describe(error) != _describe(last):
                _log.warning(f"the API server at {host} is not healthy yet", error=_describe(error))
            last = error
        else:
            _log.info(f"the API server at {host} is healthy")
            return
        await clock.sleep(min(interval, deadline - clock.now()))
    raise ApiServerNotHealthy(
        f"the API server at {host} did not answer /healthz with ok within {timeout:g}s"
        + (f": {_describe(last)}" if last is not None else "")
    ) from last


def _describe(error: Exception) -> str:
    if isinstance(error, TimeoutError):
        return "no answer in time"
    return str(error) or type(error).__name__
