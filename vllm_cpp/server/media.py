"""Image URLs the server fetches for chat image parts (issue 46;
docs/features/vision.md): ``http(s)://`` from the hosts of
``--allowed-media-domains`` and ``file://`` under
``--allowed-local-media-path``, both off by default (vLLM's flags). Each
fetch is bounded in bytes, seconds and redirects (every redirect target is
checked against the allow-list again) and runs on a worker thread, so a slow
host never stalls the event loop or other requests. A fetched image becomes
a ``data:`` URL in the body, so the engine's one decoding road
(``vllm_cpp.multimodal``) handles it and names the part in its errors."""

from __future__ import annotations

import asyncio
import base64
import http.client
import os
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from ..multimodal import MAX_IMAGE_BYTES
from .protocol import ApiError

_READ_CHUNK = 64 << 10


@dataclass(frozen=True)
class MediaFetchLimits:
    """What one fetch may cost: bytes read, seconds (connect and each read,
    and the whole fetch), redirects followed."""
    max_bytes: int = MAX_IMAGE_BYTES
    timeout_s: float = 5.0
    max_redirects: int = 3


class MediaFetcher:
    """Resolves a chat body's non-``data:`` image URLs within the allow-lists.
    ``allowed_domains``: host names (exact, case-insensitive);
    ``allowed_local_path``: a directory (resolved: symlinks and ``..``
    cannot leave it)."""

    def __init__(self, allowed_domains: Optional[Tuple[str, ...]] = None,
                 allowed_local_path: Optional[str] = None, limits: MediaFetchLimits = MediaFetchLimits()):
        self.domains: FrozenSet[str] = frozenset(d.strip().lower() for d in allowed_domains or () if d.strip())
        self.local_root = os.path.realpath(allowed_local_path) if allowed_local_path else None
        self.limits = limits

    @property
    def enabled(self) -> bool:
        """Whether any URL besides ``data:`` may be fetched; when not, the
        engine refuses such URLs in its own words."""
        return bool(self.domains) or self.local_root is not None

    async def resolve(self, body: Dict[str, Any]) -> None:
        """Replaces, in place, each fetchable ``image_url`` part's URL by a
        ``data:`` URL of what it names (all fetched at once, off the loop);
        raises ApiError(400) naming the part when one is refused."""
        if not self.enabled:
            return
        targets = list(_remote_image_parts(body))
        if not targets:
            return
        fetched = await asyncio.gather(*(asyncio.to_thread(self.fetch, url, what) for _, url, what in targets),
                                       return_exceptions=True)
        for (holder, _, _), result in zip(targets, fetched):
            if isinstance(result, BaseException):
                raise result
            holder["url"] = "data:;base64," + result

    def fetch(self, url: str, what: str) -> str:
        """The base64 of the bytes ``url`` names (blocking: a worker thread's)."""
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        if scheme == "file":
            data = self._read_local(url, what)
        elif scheme in ("http", "https"):
            data = self._read_remote(url, what)
        else:
            raise _refused(what, f"URL scheme {scheme!r} is not supported (data:, http(s): or file:)")
        return base64.b64encode(data).decode("ascii")

    # -- file:// ---------------------------------------------------------------
    def _read_local(self, url: str, what: str) -> bytes:
        if self.local_root is None:
            raise _refused(what, "file: URLs are refused: the server has no --allowed-local-media-path")
        parts = urllib.parse.urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise _refused(what, f"a file: URL names a host ({parts.netloc!r}); only local files are read")
        path = os.path.realpath(urllib.parse.unquote(parts.path))
        if os.path.commonpath([path, self.local_root]) != self.local_root:
            raise _refused(what, "the file is outside --allowed-local-media-path")
        try:
            with open(path, "rb") as f:
                data = f.read(self.limits.max_bytes + 1)
        except OSError as exc:
            raise _refused(what, f"the file cannot be read ({exc.strerror or type(exc).__name__})") from None
        if len(data) > self.limits.max_bytes:
            raise _refused(what, f"the file is larger than the {self.limits.max_bytes}-byte limit")
        return data

    # -- http(s):// ------------------------------------------------------------
    def _check_host(self, url: str, what: str) -> urllib.parse.SplitResult:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            raise _refused(what, f"a redirect to a {parts.scheme!r} URL is not followed")
        host = (parts.hostname or "").lower()
        if not self.domains:
            raise _refused(what, "remote URLs are refused: the server has no --allowed-media-domains")
        if host not in self.domains:
            raise _refused(what, f"host {host!r} is not in --allowed-media-domains")
        return parts

    def _read_remote(self, url: str, what: str) -> bytes:
        deadline = time.monotonic() + self.limits.timeout_s
        for _ in range(self.limits.max_redirects + 1):
            parts = self._check_host(url, what)
            response, connection = self._get(parts, deadline, what)
            try:
                location = response.getheader("Location")
                if response.status in (301, 302, 303, 307, 308) and location:
                    url = urllib.parse.urljoin(url, location)
                    continue
                if response.status != 200:
                    raise _refused(what, f"fetching the image answered HTTP {response.status}")
                return self._read_body(response, deadline, what)
            finally:
                connection.close()
        raise _refused(what, f"more than {self.limits.max_redirects} redirects")

    def _get(self, parts: urllib.parse.SplitResult, deadline: float, what: str):
        timeout = max(0.001, deadline - time.monotonic())  # redirects share the one fetch's time
        if parts.scheme.lower() == "https":
            connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                                     context=ssl.create_default_context())
        else:
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        try:
            connection.request("GET", target, headers={"User-Agent": "vllm-cpp", "Accept": "image/*"})
            return connection.getresponse(), connection
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise _refused(what, _network_failure(exc, self.limits.timeout_s)) from None

    def _read_body(self, response: http.client.HTTPResponse, deadline: float, what: str) -> bytes:
        limit = self.limits.max_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _refused(what, f"the image is {declared} bytes, larger than the {limit}-byte limit")
        chunks: List[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:  # a host trickling bytes: the whole fetch is bounded
                    raise _refused(what, f"fetching the image took longer than {self.limits.timeout_s:g} s")
                chunk = response.read1(_READ_CHUNK)
                if not chunk:
                    return b"".join(chunks)
                size += len(chunk)
                if size > limit:
                    raise _refused(what, f"the image is larger than the {limit}-byte limit")
                chunks.append(chunk)
        except (OSError, http.client.HTTPException) as exc:
            raise _refused(what, _network_failure(exc, self.limits.timeout_s)) from None


def _network_failure(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"fetching the image timed out ({timeout:g} s)"
    return f"fetching the image failed ({type(exc).__name__}: {exc})"


def _refused(what: str, why: str) -> ApiError:
    return ApiError(400, f"{what}: {why}", param=what)


def _remote_image_parts(body: Dict[str, Any]):
    """(the dict holding ``url``, the URL, the part's name) of each
    ``image_url`` part whose URL is not ``data:`` (the shapes the engine
    checks; anything else is left for its refusal)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    for m, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for p, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            holder = part.get("image_url")
            if isinstance(holder, str):  # the bare-string form: made a dict so it can be replaced
                holder = part["image_url"] = {"url": holder}
            url = holder.get("url") if isinstance(holder, dict) else None
            if isinstance(url, str) and not url.startswith("data:"):
                yield holder, url, f"messages[{m}].content[{p}]"
