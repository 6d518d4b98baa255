"""bench/profile.py: py-spy's collapsed stacks summarised by bucket."""

from __future__ import annotations

from bench.profile import bucket_of, render, summarise

_RUN = "Runner.run (asyncio/runners.py:118)"
_SYNC = "DeploymentController.sync (controllers/deployment/_controller.py:350)"


def test_samples_go_to_the_innermost_matching_bucket() -> None:
    write = "ClientSession._request (aiohttp/client.py:500)"
    assert bucket_of([_RUN, _SYNC, write]) == "aiohttp"
    parse = "_Connection._parse (kcontrol/client/_http.py:300)"
    transport = "Transport._send (kcontrol/client/_transport.py:280)"
    assert bucket_of([_RUN, _SYNC, transport, parse]) == "HTTP/1.1 client (kcontrol)"
    assert bucket_of([_RUN, _SYNC, transport]) == "client (kcontrol)"
    assert bucket_of([_RUN, _SYNC]) == "deployment controller"
    assert bucket_of([_RUN]) == "event loop (native)"
    assert bucket_of(["<module> (somewhere.py:1)"]) == "other"


def test_counts_and_shares() -> None:
    lines = [
        f"{_RUN};{_SYNC} 30\n",
        f"{_RUN};{_SYNC};SSLObject.write (ssl.py:930) 10\n",
        f"{_RUN} 60\n",
        "epoll_wait (native) 50\n",
        "not a sample line\n",
    ]
    summary = summarise(lines)
    assert (summary.total, summary.idle, summary.busy) == (150, 50, 100)
    assert summary.buckets == {
        "deployment controller": 30,
        "TLS, sockets": 10,
        "event loop (native)": 60,
    }
    text = render("run", summary)
    assert "  30.0 %  deployment controller" in text
    assert "  60.0 %  event loop (native)" in text
