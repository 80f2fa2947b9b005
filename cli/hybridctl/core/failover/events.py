"""Disruption events: what `failover` and `drill` apply to an inventory before they replan.

One grammar serves the command line and scenario files; an event is a kind and one argument:

    site-lost SITE              the whole site is gone
    pool-lost POOL              one pool is gone
    capacity POOL=N             the pool keeps N GPUs           (POOL=-N: it loses N)
    capacity POOL=PCT%          the pool keeps PCT % of its GPUs (POOL=-PCT%: it loses PCT %)
    price POOL=xFACTOR          the pool's price is multiplied by FACTOR
    price POOL=USD              the pool's price becomes USD per GPU-hour

Values are bounded as the inventory bounds them: a capacity event only ever shrinks a pool (it keeps at
most the GPUs it has), and a price stays within $10,000 per GPU-hour (check_events, with the inventory;
parse_event refuses what no pool could take: more GPUs than a pool may have, a price or factor above that).
    spot-reclaim POOL           a spot pool's capacity is taken back
    link-down SITE              the site loses its uplink (local inference keeps running)
    provider-lost PROVIDER      every site of a cloud provider (aws, gcp, azure) is gone (revision 4)
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from hybridctl.core.inventory.models import (
    MAX_POOL_GPUS,
    MAX_USD_PER_GPU_HOUR,
    CapacityType,
    Inventory,
    SiteKind,
)
from hybridctl.errors import Location, UsageError


class EventKind(StrEnum):
    SITE_LOST = "site-lost"
    POOL_LOST = "pool-lost"
    CAPACITY = "capacity"
    PRICE = "price"
    SPOT_RECLAIM = "spot-reclaim"
    LINK_DOWN = "link-down"
    PROVIDER_LOST = "provider-lost"


SITE_EVENTS = frozenset({EventKind.SITE_LOST, EventKind.LINK_DOWN})
GRAMMAR = ("site-lost SITE | pool-lost POOL | capacity POOL=N|POOL=PCT%|POOL=-N|POOL=-PCT% | "
           "price POOL=xFACTOR|POOL=USD | spot-reclaim POOL | link-down SITE | provider-lost PROVIDER")

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_CAPACITY = re.compile(rf"^(?P<pool>[^=\s]+)=(?P<minus>-)?(?P<amount>{_NUMBER})(?P<pct>%)?$")
_PRICE = re.compile(rf"^(?P<pool>[^=\s]+)=(?P<times>[x×*])?\$?(?P<amount>{_NUMBER})$")
_EXAMPLES = MappingProxyType({
    EventKind.SITE_LOST: "site-lost dc-frankfurt",
    EventKind.POOL_LOST: "pool-lost p5-spot",
    EventKind.CAPACITY: "capacity h100-reserved=32, capacity h100-reserved=50% or capacity h100-reserved=-25%",
    EventKind.PRICE: "price p5-spot=x3 or price p5-spot=7.35",
    EventKind.SPOT_RECLAIM: "spot-reclaim p5-spot",
    EventKind.LINK_DOWN: "link-down edge-store-17",
    EventKind.PROVIDER_LOST: "provider-lost gcp",
})


class EventSyntaxError(UsageError):
    """An event that does not follow the grammar, or names no site or pool of the inventory."""


@dataclass(frozen=True)
class Event:
    kind: EventKind
    target: str  # a site for site-lost and link-down, a provider for provider-lost, otherwise a pool
    amount: float | None = None  # capacity: GPUs or percent; price: USD or factor
    percent: bool = False  # capacity: amount is a percentage of the pool's GPUs
    reduce: bool = False  # capacity: the pool loses the amount instead of keeping it
    factor: bool = False  # price: amount multiplies the current price
    location: Location | None = field(default=None, compare=False)  # where a scenario file wrote it

    def __str__(self) -> str:
        if self.kind is EventKind.CAPACITY:
            assert self.amount is not None
            return f"capacity {self.target}={'-' if self.reduce else ''}{self.amount:g}{'%' if self.percent else ''}"
        if self.kind is EventKind.PRICE:
            assert self.amount is not None
            return f"price {self.target}={'x' if self.factor else ''}{self.amount:g}"
        return f"{self.kind.value} {self.target}"

    def capacity_after(self, gpus: int) -> int:
        """A pool's capacity in GPUs after this capacity event (a fraction of a GPU is lost)."""
        assert self.amount is not None
        change = gpus * self.amount / 100.0 if self.percent else self.amount
        kept = gpus - change if self.reduce else change
        return max(0, math.floor(kept + 1e-9))

    def price_after(self, usd_per_gpu_hour: float) -> float:
        assert self.amount is not None
        return usd_per_gpu_hour * self.amount if self.factor else self.amount


def _kind(word: str, where: str) -> EventKind:
    try:
        return EventKind(word)
    except ValueError:
        close = difflib.get_close_matches(word, [k.value for k in EventKind], n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'?" if close else f"events are: {GRAMMAR}"
        raise EventSyntaxError(f"{where}'{word}' is not an event", hint=hint) from None


def parse_event(kind_word: str, argument: str, *, where: str = "", location: Location | None = None) -> Event:
    """One event from its two words; `where` prefixes the message (e.g. "event 2: ")."""
    kind = _kind(kind_word, where)
    bad = EventSyntaxError(f"{where}'{kind.value} {argument}' is malformed", location=location,
                           hint=f"write it like: {_EXAMPLES[kind]}")
    if kind is EventKind.CAPACITY:
        match = _CAPACITY.match(argument)
        if match is None:
            raise bad
        amount = float(match["amount"])
        percent = match["pct"] is not None
        if not percent and not amount <= MAX_POOL_GPUS:  # also a number too long for a float (inf)
            raise EventSyntaxError(f"{where}'{kind.value} {_shown(argument)}': more GPUs than a pool may have "
                                   f"({MAX_POOL_GPUS:,})", location=location,
                                   hint="capacity POOL=N keeps N of the pool's GPUs; POOL=-N takes N away")
        if percent and amount > 100:
            raise EventSyntaxError(f"{where}'{kind.value} {argument}': a percentage above 100 %", location=location,
                                   hint="capacity keeps (POOL=PCT%) or loses (POOL=-PCT%) at most 100 % of a pool")
        if not percent and amount != int(amount):
            raise EventSyntaxError(f"{where}'{kind.value} {argument}': GPUs come in whole numbers", location=location,
                                   hint=f"write it like: {_EXAMPLES[kind]}")
        return Event(kind, match["pool"], amount, percent, match["minus"] is not None, location=location)
    if kind is EventKind.PRICE:
        match = _PRICE.match(argument)
        if match is None:
            raise bad
        factor = match["times"] is not None
        amount = float(match["amount"])
        if not amount <= MAX_USD_PER_GPU_HOUR:  # also a number too long for a float (inf)
            raise EventSyntaxError(f"{where}'{kind.value} {_shown(argument)}': "
                                   + (f"a price factor above {MAX_USD_PER_GPU_HOUR:,.0f}" if factor else
                                      f"a price above ${MAX_USD_PER_GPU_HOUR:,.0f} per GPU-hour, the most an inventory "
                                      "allows"), location=location, hint=f"write it like: {_EXAMPLES[kind]}")
        if factor and amount <= 0:
            raise EventSyntaxError(f"{where}'{kind.value} {argument}': a price factor must be above 0",
                                   location=location, hint=f"write it like: {_EXAMPLES[kind]}")
        return Event(kind, match["pool"], amount, factor=factor, location=location)
    if "=" in argument or not argument:
        raise bad
    return Event(kind, argument, location=location)


def _shown(argument: str) -> str:
    """An argument as a message quotes it: a number of 400 digits is cut short."""
    return argument if len(argument) <= 60 else f"{argument[:40]}…({len(argument)} characters)"


def parse_events(words: Sequence[str]) -> list[Event]:
    """Events from command-line words: `site-lost dc-a capacity p1=50%`, or each event quoted as one word.
    Words are split at spaces only: a line break (or any other control character) inside an argument made
    `$'dc-a\\nsite-lost dc-b'` two events where the user typed one."""
    for number, word in enumerate(words, start=1):
        if any(not character.isprintable() for character in word):
            raise EventSyntaxError(f"argument {number}: {_shown(word)!r} holds a line break or a control character",
                                   hint="give each event as its kind and its argument (site-lost dc-fra), separated "
                                        "by spaces, or each event quoted as one word")
    tokens = [token for word in words for token in word.split(" ") if token]
    if not tokens:
        raise EventSyntaxError("no event given", hint=f"events are: {GRAMMAR}")
    events: list[Event] = []
    for start in range(0, len(tokens), 2):
        number = start // 2 + 1
        where = f"event {number}: "
        if start + 1 >= len(tokens):
            kind = _kind(tokens[start], where)
            raise EventSyntaxError(f"{where}'{kind.value}' needs an argument", hint=f"write it like: {_EXAMPLES[kind]}")
        events.append(parse_event(tokens[start], tokens[start + 1], where=where))
    return events


def provider_sites(inventory: Inventory, provider: str) -> list[str]:
    """The cloud sites of a provider (provider-lost loses every one of them)."""
    return [s.name for s in inventory.sites if s.kind is SiteKind.CLOUD and (s.provider or "aws") == provider]


def providers_in_use(inventory: Inventory) -> list[str]:
    return sorted({s.provider or "aws" for s in inventory.sites if s.kind is SiteKind.CLOUD})


def event_problem(event: Event, inventory: Inventory) -> tuple[str, str] | None:
    """(message, hint) when the event names no site or pool of the inventory, or the wrong kind of pool."""
    if event.kind is EventKind.PROVIDER_LOST:
        if provider_sites(inventory, event.target):
            return None
        return (f"'{event}': no cloud site of the inventory is on provider '{event.target}'",
                f"providers in use: {', '.join(providers_in_use(inventory)) or 'none'}")
    sites = {s.name: s for s in inventory.sites}
    pools = {p.name: p for s in inventory.sites for p in s.pools}
    if event.kind in SITE_EVENTS:
        if event.target in sites:
            return None
        if event.target in pools:  # a pool's name where a site's goes: the event for a pool is another
            site = next(s.name for s in inventory.sites if any(p.name == event.target for p in s.pools))
            return (f"'{event}': {event.target} is a pool (of site {site}), not a site",
                    f"for the pool use `pool-lost {event.target}`; for its whole site `{event.kind.value} {site}`")
        names, what = sorted(sites), "site"
    else:
        pool = pools.get(event.target)
        if pool is not None:
            if event.kind is EventKind.SPOT_RECLAIM and pool.capacity_type is not CapacityType.SPOT:
                return (f"'{event}': pool {event.target} is {pool.capacity_type.value} capacity, not spot",
                        f"spot-reclaim applies to spot pools; for other pools use `pool-lost {event.target}` "
                        f"or `capacity {event.target}=N`")
            return None
        names, what = sorted(pools), "pool"
    close = difflib.get_close_matches(event.target, names, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"the inventory's {what}s: {', '.join(names) or 'none'}"
    return f"'{event}': the inventory has no {what} named '{event.target}'", hint


def value_problems(events: Sequence[Event], inventory: Inventory) -> list[tuple[int, str, str]]:
    """(index, message, hint) of each event whose value the inventory's bounds refuse, the events applied in
    order (as disrupt applies them): a capacity event that would grow a pool (a failover replans what is
    left; more capacity is a change of the inventory), a price above MAX_USD_PER_GPU_HOUR."""
    from hybridctl.core.placement.eligibility import pool_infos

    info = {p.name: p for p in pool_infos(inventory)}
    capacity = {name: p.capacity_gpus for name, p in info.items()}
    price = {name: p.usd_per_gpu_hour for name, p in info.items()}
    problems: list[tuple[int, str, str]] = []
    for index, event in enumerate(events):
        if event.kind in (EventKind.SITE_LOST, EventKind.PROVIDER_LOST):
            lost = provider_sites(inventory, event.target) if event.kind is EventKind.PROVIDER_LOST else [event.target]
            for site in inventory.sites:
                if site.name in lost:
                    for pool in site.pools:
                        capacity[pool.name] = 0
        elif event.target not in info:
            continue  # event_problem names it
        elif event.kind in (EventKind.POOL_LOST, EventKind.SPOT_RECLAIM):
            capacity[event.target] = 0
        elif event.kind is EventKind.CAPACITY:
            after = event.capacity_after(capacity[event.target])
            if after > capacity[event.target]:
                problems.append((index, f"'{event}': a capacity event may only shrink a pool: {event.target} has "
                                 f"{capacity[event.target]} GPUs",
                                 f"capacity {event.target}=N keeps N of its GPUs; to add capacity, change the "
                                 "inventory and plan again"))
                continue
            capacity[event.target] = after
        elif event.kind is EventKind.PRICE:
            price_after = event.price_after(price[event.target])
            if price_after > MAX_USD_PER_GPU_HOUR:
                problems.append((index, f"'{event}': the price of {event.target} would be ${price_after:,.2f} per "
                                 "GPU-hour, "
                                 f"above the ${MAX_USD_PER_GPU_HOUR:,.0f} an inventory allows",
                                 f"write it like: {_EXAMPLES[EventKind.PRICE]}"))
                continue
            price[event.target] = price_after
    return problems


def check_events(events: Sequence[Event], inventory: Inventory) -> None:
    """Raise EventSyntaxError (exit 2) for the first event that does not fit the inventory."""
    for number, event in enumerate(events, 1):
        problem = event_problem(event, inventory)
        if problem is not None:
            raise EventSyntaxError(f"event {number}: {problem[0]}", location=event.location, hint=problem[1])
    for index, message, hint in value_problems(events, inventory)[:1]:
        raise EventSyntaxError(f"event {index + 1}: {message}", location=events[index].location, hint=hint)
