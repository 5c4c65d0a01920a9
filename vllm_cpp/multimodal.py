"""Images for vision-language models (issue 46; docs/features/vision.md).

libvllm takes raw RGB pixels (``vllm_image``); this module turns what users
pass into them: ``PIL.Image`` objects (vLLM's ``multi_modal_data={"image":
...}``), and chat content parts (``image_url`` with a ``data:`` base64 URL,
or ``image_pil``) decoded with Pillow, the optional ``[vision]`` extra. A
chat request's image parts become ``{"type": "image"}`` parts, the pixels
going beside the request. Remote URLs are fetched only by the server, within
its allow-list (``vllm_cpp.server.media``).
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._ffi import ffi
from .errors import InvalidArgumentError

#: The largest encoded image accepted (bytes), before decoding.
MAX_IMAGE_BYTES = 32 << 20
#: Pillow's own guard against decompression bombs, as pixels.
MAX_IMAGE_PIXELS = 16384 * 16384


def _pillow():
    try:
        from PIL import Image
    except ImportError as exc:  # the optional extra
        raise InvalidArgumentError("images need Pillow: pip install 'vllm-cpp[vision]'") from exc
    return Image


def decode_image(data: bytes, what: str):
    """A PIL image from an encoded file's bytes (PNG, JPEG, WebP, GIF: its
    first frame), or InvalidArgumentError naming ``what``."""
    Image = _pillow()
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidArgumentError(f"{what}: {len(data)} bytes is larger than the {MAX_IMAGE_BYTES}-byte limit")
    try:
        image = Image.open(io.BytesIO(data))
        if image.width * image.height > MAX_IMAGE_PIXELS:
            raise InvalidArgumentError(f"{what}: {image.width}x{image.height} pixels is too large")
        image.load()
    except InvalidArgumentError:
        raise
    except Image.DecompressionBombError as exc:
        raise InvalidArgumentError(f"{what}: the image is too large ({exc})") from exc
    except Exception as exc:  # Pillow raises many kinds for a bad file
        raise InvalidArgumentError(f"{what}: not a decodable image ({type(exc).__name__}: {exc})") from exc
    return image


def decode_data_url(url: str, what: str):
    """The image of a ``data:image/...;base64,...`` URL."""
    header, sep, payload = url.partition(",")
    if not sep or not header.startswith("data:"):
        raise InvalidArgumentError(f"{what}: not a data: URL")
    if not header.endswith(";base64"):
        raise InvalidArgumentError(f"{what}: a data: URL must be base64-encoded (';base64,')")
    mime = header[len("data:"):-len(";base64")]
    if mime and not mime.startswith("image/"):
        raise InvalidArgumentError(f"{what}: media type '{mime}' is not an image")
    if len(payload) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise InvalidArgumentError(f"{what}: the data: URL is larger than the {MAX_IMAGE_BYTES}-byte limit")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidArgumentError(f"{what}: the data: URL is not valid base64") from exc
    return decode_image(data, what)


def rgb_of(image: Any, what: str) -> Tuple[int, int, bytes]:
    """(width, height, packed RGB bytes) of a PIL image (any mode: converted
    as Pillow converts it; transparency dropped)."""
    Image = _pillow()
    if not isinstance(image, Image.Image):
        raise InvalidArgumentError(f"{what}: expected a PIL.Image.Image, got {type(image).__name__}")
    if image.width <= 0 or image.height <= 0:
        raise InvalidArgumentError(f"{what}: image size {image.width}x{image.height} has no pixels")
    if image.mode != "RGB":
        image = image.convert("RGB")
    return image.width, image.height, image.tobytes()


class NativeImages:
    """A ``vllm_image[]`` over images (PIL images, or ``(width, height,
    rgb_bytes)``), its buffers kept alive as long as this object."""

    def __init__(self, images: Sequence[Any]):
        self.count = len(images)
        self._keep: List[Any] = []
        self.array = ffi.new("vllm_image[]", max(1, self.count))
        for i, image in enumerate(images):
            what = f"image {i + 1}"
            width, height, rgb = image if isinstance(image, tuple) else rgb_of(image, what)
            buffer = ffi.from_buffer("uint8_t[]", rgb)
            self._keep.append((rgb, buffer))
            entry = self.array[i]
            entry.width, entry.height, entry.rgb, entry.rgb_bytes = width, height, buffer, len(rgb)
            entry.embedding, entry.n_embedding_rows = ffi.NULL, 0

    @property
    def ptr(self):
        return self.array if self.count else ffi.NULL


def images_of_multi_modal_data(data: Optional[Dict[str, Any]]) -> List[Any]:
    """vLLM's ``multi_modal_data``: ``{"image": image | [images]}``."""
    if not data:
        return []
    unknown = sorted(set(data) - {"image"})
    if unknown:
        raise InvalidArgumentError(f"multi_modal_data: modality {unknown[0]!r} is not supported (only 'image')")
    images = data["image"]
    return list(images) if isinstance(images, (list, tuple)) else [images]


def split_chat_images(body: Dict[str, Any], fetch=None) -> Tuple[Dict[str, Any], List[Any]]:
    """A chat body with its image parts as ``{"type": "image"}`` and their
    images, in order. ``image_url`` parts: ``data:`` URLs decoded here,
    other URLs through ``fetch(url, what)`` (the server's allow-listed
    fetcher) or refused; ``image_pil`` parts: the PIL image itself."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return body, []
    images: List[Any] = []
    new_messages = []
    for m, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            new_messages.append(message)
            continue
        parts = []
        for p, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            what = f"messages[{m}].content[{p}]"
            if kind == "image_url":
                url = part.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                if not isinstance(url, str):
                    raise InvalidArgumentError(f"'{what}.image_url.url' must be a string")
                if url.startswith("data:"):
                    images.append(decode_data_url(url, what))
                elif fetch is not None:
                    images.append(fetch(url, what))
                else:
                    raise InvalidArgumentError(f"{what}: only data: URLs are decoded here (got "
                                               f"{url.split(':', 1)[0]!r}); a server fetches http(s) and file "
                                               "URLs when allowed (--allowed-media-domains, --allowed-local-media-path)")
                parts.append({"type": "image"})
            elif kind == "image_pil":
                images.append(part.get("image_pil"))
                parts.append({"type": "image"})
            elif kind in ("image", "input_image"):
                raise InvalidArgumentError(f"{what}: an image part needs its image (image_url with a data: URL)")
            else:
                parts.append(part)
        new_messages.append(dict(message, content=parts))
    if not images:
        return body, []
    return dict(body, messages=new_messages), images
