"""Memory sizes as people write them in grids and on Spark/Dask command lines.

All suffixes are binary: ``64GiB``, ``64G``, ``64g`` and ``65536m`` are the same size,
because Spark's ``g``/``m`` (``--executor-memory 13g``) are binary units too.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from sweeper.text import shown

MIB_PER_GIB = 1024
MIB_PER_TIB = 1024 * MIB_PER_GIB
# 1 PiB: larger than any one machine's memory, small enough for exact arithmetic everywhere
MAX_SIZE_MIB = 1024 * MIB_PER_TIB
# digits of a size's number (with its point): enough for any size up to MAX_SIZE_MIB written in KiB
MAX_SIZE_DIGITS = 24
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt])(?:i?b)?\s*$", re.IGNORECASE)
_MIB_PER_UNIT = {"k": Fraction(1, 1024), "m": Fraction(1), "g": Fraction(MIB_PER_GIB), "t": Fraction(MIB_PER_TIB)}
SIZE_FORMS = "a size such as 64GiB, 64G, 512MiB or 65536m (binary units, at most 1024TiB)"


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
    >>> parse_size_mib("2048TiB")
    Traceback (most recent call last):
    ...
    ValueError: '2048TiB' is larger than 1024TiB
    >>> parse_size_mib("9" * 400 + "GiB")
    Traceback (most recent call last):
    ...
    ValueError: '9999999999999999999999999999999999999...99999999999999999999999999999999999GiB' has more than 24 digits
    """
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{shown(text)} is not a size")
    number, unit = match.groups()
    if len(number) > MAX_SIZE_DIGITS:
        raise ValueError(f"{shown(text)} has more than {MAX_SIZE_DIGITS} digits")
    mib = math.floor(Fraction(number) * _MIB_PER_UNIT[unit.lower()])
    if mib > MAX_SIZE_MIB:
        raise ValueError(f"{shown(text)} is larger than {MAX_SIZE_MIB // MIB_PER_TIB}TiB")
    return mib


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
