"""Reading a producer's source description (docs/PROTOCOL.md, "Source description").

The description is free text for people, except for ``key=value`` words that clients rely on. The Java side
writes and reads them in ``io.tensorsocket.pipeline.Normalization``; this module reads the same words.
"""

import re

_MEAN = re.compile(r"(?:^|\s)mean=([-+0-9.eE]+)(?=\s|$)")
_STD = re.compile(r"(?:^|\s)std=([-+0-9.eE]+)(?=\s|$)")


def normalization(description):
    """``(mean, std)`` the producer applied as ``(v / 255 - mean) / std``, or None when it announces none.

    Raises ValueError when the description names only one of them or a value that is not a number.
    """
    mean, std = _MEAN.search(description), _STD.search(description)
    if mean is None and std is None:
        return None
    if mean is None or std is None:
        raise ValueError("the source description names %s: %s"
                         % ("a mean but no std" if std is None else "a std but no mean", description))
    try:
        m, s = float(mean.group(1)), float(std.group(1))
    except ValueError:
        raise ValueError("the source description's mean or std is not a number: %s" % description) from None
    if not s > 0:
        raise ValueError("the source description's std is not positive: %s" % description)
    return m, s
