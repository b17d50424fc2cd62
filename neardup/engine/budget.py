"""The memory budget every executor works within: the default limit and the sizes a
user may write (``--memory-limit 2GB``)."""

from __future__ import annotations

import os
import re

__all__ = ["default_memory_limit", "parse_memory"]


def default_memory_limit() -> int:
    """An eighth of physical memory, between 256 MiB and 1 GiB: the stage's buffers
    (spilled keys, verification chunks). More buys fewer, larger files, not speed;
    the rest is left to per-document arrays, the OS page cache (which serves the
    spilled files back) and other work."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return int(min(max(total // 8, 256 << 20), 1 << 30))


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_memory(text: str | int) -> int:
    """Bytes from ``"2GB"``, ``"512M"``, ``"1.5GiB"`` or a plain number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise ValueError(
                f"memory limit must be a size such as 4GB, 512MB or 1.5GiB; got {text!r}"
            )
        value = int(float(match.group(1)) * _UNITS[unit])
    if value < 1 << 20:
        raise ValueError(f"memory limit must be at least 1MB; got {text!r}")
    return value
