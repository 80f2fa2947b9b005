"""load_plain with the second half of a large YAML file parsed in a forked child (core/inventory/yamlsplit.py):
about half the parse of a 100,000-workload inventory moves to the second core."""

from __future__ import annotations

from functools import partial

from hybridctl.core.inventory.yamlsource import Value, load_plain
from hybridctl.core.inventory.yamlsplit import join_plain, parse_head, parse_tail, split_plain
from hybridctl.drivers.background import Background


def load_plain_beside(text: str) -> Value | None:
    """load_plain(text), the same value, in two processes when the text can be cut."""
    split = split_plain(text)
    if split is None:
        return load_plain(text)
    with Background(partial(parse_tail, split)) as tail:
        head = parse_head(split)
        joined = None if head is None else join_plain(split, head, tail.result())
    # a part that is not plain YAML, or parts that cannot show the whole: the whole text decides
    return joined if joined is not None else load_plain(text)
