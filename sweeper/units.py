"""Memory sizes as people write them in grids and on Spark/Dask command lines.

All suffixes are binary: ``64GiB``, ``64G``, ``64g`` and ``65536m`` are the same size,
because Spark's ``g``/``m`` (``--executor-memory 13g``) are binary units too.
"""

from __future__ import annotations

import math
import re

MIB_PER_GIB = 1024
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt])(?:i?b)?\s*$", re.IGNORECASE)
_MIB_PER_UNIT = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
SIZE_FORMS = "a size such as 64GiB, 64G, 512MiB or 65536m (binary units)"


def parse_size_mib(text: object) -> int:
    """Parse a memory size into whole MiB.

    >>> parse_size_mib("64GiB"), parse_size_mib("64G"), parse_size_mib("65536m")
    (65536, 65536, 65536)
    >>> parse_size_mib("512MiB"), parse_size_mib("1.5g")
    (512, 1536)
    >>> parse_size_mib("lots")
    Traceback (most recent call last):
    ...
    ValueError: 'lots' is not a size
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"{text!r} is not a size")
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not a size")
    number, unit = match.groups()
    return math.floor(float(number) * _MIB_PER_UNIT[unit.lower()])


def format_mib(mib: int) -> str:
    """Format MiB the way people read it: whole GiB when exact.

    >>> format_mib(13312), format_mib(1536)
    ('13GiB', '1536MiB')
    """
    if mib % MIB_PER_GIB == 0:
        return f"{mib // MIB_PER_GIB}GiB"
    return f"{mib}MiB"


def spark_size(mib: int) -> str:
    """Format MiB as Spark's JVM-style size (``13g``, ``1536m``).

    >>> spark_size(13312), spark_size(1536)
    ('13g', '1536m')
    """
    if mib % MIB_PER_GIB == 0:
        return f"{mib // MIB_PER_GIB}g"
    return f"{mib}m"
