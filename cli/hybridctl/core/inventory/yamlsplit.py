"""A large YAML file read in two parts that can be parsed at the same time (load_plain's values).

A 100,000-workload inventory takes seconds to parse, almost all of it in PyYAML building one
Python object per libyaml event; a second core can parse half of it. The cut is made inside the
block sequence that ends the document (an inventory's `workloads:` list), between two of its
items, where the text alone shows that nothing spans the cut: no quoted or block scalars, no tags,
no directives, no tabs or unusual line breaks, nothing but items from the cut to the end. The head
(everything before the cut) is a document of its own; the tail is a block sequence of its own,
whose aliases to anchors of the head are filled in from the head's anchors. `join_plain` returns
load_plain's value for the whole text, or None when the parts cannot show it; the caller then
parses the whole text (which also covers every malformed file: errors are reported from it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hybridctl.core.inventory import yamlsource
from hybridctl.core.inventory.yamlsource import PlainParse, Value, parse_plain

SPLIT_MIN_CHARS = 1_000_000  # below, a second process costs more than it saves (10,000 workloads: 1.5 MB)

# Characters that may make a line mean something else than it seems (multi-line quoted or block
# scalars, tags, directives, tabs, line breaks other than \n, a byte order mark).
_UNSAFE = ('"', "'", "|", ">", "!", "%", "?", "\t", "\r", "\x85", "\u2028", "\u2029", "\ufeff", "\x00")
_KEY_LINE = re.compile(r"\n([A-Za-z_][A-Za-z0-9_-]*):\n")  # a top-level key with its value below it
_NOT_AN_ITEM = re.compile(r"\n(?:[^-\s#]|-[^ \n])")  # a line at column 0 that starts no item


@dataclass(frozen=True)
class Split:
    head: str  # the document up to the cut: a whole document of its own
    tail: str  # the items after the cut: a block sequence at column 0
    key: str  # the top-level key whose sequence is cut


def split_plain(text: str) -> Split | None:
    """Where to cut `text` in two parts of about the same size, or None."""
    if len(text) < SPLIT_MIN_CHARS or any(c in text for c in _UNSAFE):
        return None
    cut = text.find("\n- ", len(text) // 2) + 1
    if cut == 0 or _NOT_AN_ITEM.search(text, cut - 1):
        return None
    head = text[:cut]
    keys = [m for m in _KEY_LINE.finditer(head) if m.end() < cut]
    if not keys:
        return None
    key_line = keys[-1]
    # between the key and the cut: its items only (the key is the last line at column 0 before them)
    if not head.startswith("- ", key_line.end()) or _NOT_AN_ITEM.search(head, key_line.end() - 1, cut - 1):
        return None
    return Split(head, text[cut:], key_line.group(1))


def parse_head(split: Split) -> PlainParse | None:
    return parse_plain(split.head)


def parse_tail(split: Split) -> PlainParse | None:
    # the tail's items are two levels down in the whole document: the top mapping, the sequence
    return parse_plain(split.tail, depth=1, unresolved=True)


def join_plain(split: Split, head: PlainParse | None, tail: PlainParse | None) -> Value | None:
    """load_plain(text) from its two parts, or None when they cannot show it (parse the whole text)."""
    if head is None or tail is None or not isinstance(head.value, dict) or not isinstance(tail.value, list):
        return None
    document = head.value
    if not document or list(document)[-1] != split.key or not isinstance(document[split.key], list):
        return None
    items = document[split.key]
    assert isinstance(items, list)
    # anchors on what the cut leaves open (the document, its sequence) are not defined before the tail
    if any(value is document or value is items for value, _ in head.anchors.values()):
        return None
    expanded = head.expanded + tail.expanded - 1  # the tail's own sequence is the head's
    for container, slot, name in tail.unresolved:
        if name not in head.anchors:
            return None
        value, size = head.anchors[name]
        container[slot] = value  # type: ignore[index]
        expanded += size - 1
    if expanded > yamlsource.MAX_EXPANDED_NODES:
        return None
    items.extend(tail.value)
    return document
