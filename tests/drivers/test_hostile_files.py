"""Hostile files, per kind of file hybridctl reads (issue 34, findings 1, 5, 6, 9, 10, 11): whatever sits at
a path, each command ends with a documented exit code (never 70, the code of a bug), one message naming the
file (and the line or field where there is one), and nothing written or deleted outside the places the
command owns. Every kind also has a fuzz test, bounded in examples and time.

Kinds and the cases tried:
- inventory: a directory entry (*.yaml) that is a dangling symbolic link, a loop of links, a FIFO, a
  character device (a link to /dev/zero), a socket, a directory; an inventory path that is /dev/zero, a
  FIFO, a link to /dev/zero; fuzz: any mix of regular and hostile entries.
- plan file: a FIFO, a link to /dev/zero, a directory, a dangling link, a sparse file over the 1 GiB limit,
  binary data; fuzz: any bytes.
- state and journal: state.json holding null, a list, a number, text, true, a revision that is text,
  binary data; state.json a FIFO, a link to /dev/zero, a directory; lock.holder.json a FIFO; a journal line
  damaged mid-file, binary data, a record with a field of the wrong type or an unknown field, a journal that
  is a FIFO; fuzz: any JSON as state.json (nothing overwritten), any lines as the journal.
- runbook documents: runbooks/active.json a FIFO, a link to /dev/zero, a directory; fuzz: any bytes.
- scenario files: a FIFO, a link to /dev/zero, binary data, a sparse file over the limit; fuzz: any bytes.
- bundle: manifest.json or manifest.sig a symbolic link (to the real file, or to /dev/zero), a FIFO, a
  directory, a sparse manifest over the limit; a model or version name with a trailing newline; a public
  key that is /dev/zero; fuzz: any manifest bytes, and any model/version text.
- synth's output directory: an index.json listing `..`, `.`, `../x`, an absolute path, `a/b`; a stack
  directory that is a symbolic link out of --out, has no synth marker, a marker of another stack, holds
  files synth did not write or files changed since; index.json a FIFO or a link to /dev/zero; fuzz: any
  stack names in the index.
(State URLs: tests/drivers/test_state_urls.py.)
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hybridctl.drivers.filereader import DOCUMENT_LIMIT, MANIFEST_LIMIT, SCENARIO_LIMIT
from hybridctl.drivers.state import State, StateStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import BASE
from support.hostile import tree
from support.inproc import Result, run_cli

DOCUMENTED = {1, 2, 3, 4}  # the README's exit codes for errors; 70 is a bug
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])


# --- what every case asserts ----------------------------------------------------------------------


class Blocked(BaseException):
    """Raised by the alarm: not an OSError (nor an Exception) that a reader's handler would take for a read error."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail, rather than hang, when a command blocks (on a FIFO with no writer)."""
    def expired(*_: object) -> None:
        raise Blocked(f"blocked for more than {seconds}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def refused(result: Result, path: Path | str, *fragments: str, codes: set[int] = DOCUMENTED) -> None:
    """A documented exit code, no traceback, and one message naming the file (plus `fragments`)."""
    assert result.code in codes, (result.code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    flat = " ".join(result.output.split())
    assert str(path) in flat, flat
    for fragment in fragments:
        assert fragment in flat, flat
    assert flat.count("error:") + flat.count("✗") <= 2, flat  # one message (validate adds a summary line)


@contextmanager
def untouched(root: Path, *owned: str) -> Iterator[None]:
    """Nothing under root changes but the places the command owns (relative paths, and what is below)."""
    before = tree(root)
    yield
    after = tree(root)

    def foreign(entries: dict[str, tuple[int, str, int]]) -> dict[str, tuple[int, str, int]]:
        return {k: v for k, v in entries.items() if not any(k == o or k.startswith(o + "/") for o in owned)}

    assert foreign(after) == foreign(before)


# What tells a command that blocks (reads a FIFO) from one that works: generous, for a loaded machine, since a
# blocked command never ends and a working one ends well within it
BLOCKED_AFTER_S = 120


def cli(tmp_path: Path, *args: str | Path, seconds: float = BLOCKED_AFTER_S) -> Result:
    with within(seconds):
        return run_cli(*map(str, args))


# Ways a path can be something other than a regular file. Each takes the path to create.
def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "gone.yaml")


def _loop(path: Path) -> None:
    partner = path.with_name(path.name + ".partner")
    path.symlink_to(partner.name)
    partner.symlink_to(path.name)


def _socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))


HOSTILE: dict[str, Callable[[Path], None]] = {
    "dangling-link": _dangling,
    "link-loop": _loop,
    "fifo": os.mkfifo,
    "device": lambda path: path.symlink_to("/dev/zero"),
    "socket": _socket,
    "directory": lambda path: path.mkdir(),
}
WORDS = {"dangling-link": "which does not exist", "link-loop": "a loop of symbolic links", "fifo": "a FIFO",
         "device": "a character device", "socket": "a socket", "directory": "Is a directory"}


def sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)  # no disk, no memory
    return path


@pytest.fixture(autouse=True)
def _in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test in its own working directory: a default state (./.hybridctl) would land there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYBRIDCTL_STATE", raising=False)


# --- inventory -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_an_inventory_directory_entry_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """Finding 5: it was skipped, and the directory validated as "valid … 0 workloads"."""
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "a.yaml").write_text(BASE)
    HOSTILE[kind](inventory / "workloads.yaml")
    with untouched(tmp_path):
        result = cli(tmp_path, "validate", inventory)
    refused(result, inventory / "workloads.yaml", WORDS[kind], codes={2})


@pytest.mark.parametrize("kind", ["fifo", "device", "dangling-link", "link-loop"])
def test_an_inventory_path_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """Finding 9: `validate /dev/zero` exhausted memory, and a FIFO blocked forever."""
    path = tmp_path / "inventory.yaml"
    HOSTILE[kind](path)
    with untouched(tmp_path):
        result = cli(tmp_path, "validate", path)
    refused(result, path, WORDS[kind], codes={2})


def test_dev_zero_itself_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    refused(cli(tmp_path, "validate", "/dev/zero"), "/dev/zero", "a character device", codes={2})


@FUZZ
@given(kinds=st.lists(st.sampled_from(["regular", *sorted(HOSTILE)]), min_size=1, max_size=4))
def test_fuzz_inventory_directories(tmp_path_factory: pytest.TempPathFactory, kinds: list[str]) -> None:
    root = tmp_path_factory.mktemp("inv")
    inventory = root / "inventory"
    inventory.mkdir()
    (inventory / "a.yaml").write_text(BASE)
    for i, kind in enumerate(kinds):
        path = inventory / f"b{i}.yaml"
        if kind == "regular":
            path.write_text("version: 1\nname: test\n")
        else:
            HOSTILE[kind](path)
    with untouched(root):
        result = cli(root, "validate", inventory)
    bad = [i for i, kind in enumerate(kinds) if kind != "regular"]
    if bad:
        refused(result, inventory / f"b{bad[0]}.yaml", codes={2})
    else:
        assert result.code == 0, result.output


# --- plan files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "dangling-link", "huge", "binary"])
def test_a_plan_file_that_is_not_one(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "plan.json"
    if kind == "huge":
        sparse(path, DOCUMENT_LIMIT + 1)
    elif kind == "binary":
        path.write_bytes(os.urandom(4096) + b"\xff")
    else:
        HOSTILE[kind](path)
    with untouched(tmp_path):
        result = cli(tmp_path, "show", path)
    refused(result, path)


@FUZZ
@given(data=st.binary(max_size=2048))
def test_fuzz_plan_files(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    root = tmp_path_factory.mktemp("plan")
    path = root / "plan.json"
    path.write_bytes(data)
    with untouched(root):
        refused(cli(root, "show", path), path)


# --- state and journal -----------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "words"), [
    (b"null\n", "it holds null, not an object"),
    (b"[]", "it holds a JSON list, not an object"),
    (b"3", "it holds a JSON int, not an object"),
    (b'"state"', "it holds a JSON str, not an object"),
    (b"true", "it holds a JSON bool, not an object"),
    (b'{"format_version": 1, "revision": "7"}', "revision '7' is not a whole number"),
    (b"\xff\xfe{}", "not a hybridctl state file"),
])
def test_a_state_file_that_holds_no_state_is_refused_and_kept(tmp_path: Path, content: bytes, words: str) -> None:
    """Finding 6: `null` was read as "no state yet" and the next write replaced it."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "state.json").write_bytes(content)
    inventory = base_file(tmp_path)
    with untouched(tmp_path, "state/lock", "state/lock.holder.json"):
        for command in (("status", "--no-drift"), ("plan", str(inventory), "--out", "p.json")):
            refused(cli(tmp_path, *command, "--state", state), state / "state.json", words, codes={1})
    assert (state / "state.json").read_bytes() == content


def base_file(root: Path) -> Path:
    path = root / "base.yaml"
    if not path.exists():
        path.write_text(BASE)
    return path


def test_null_state_is_never_overwritten_by_a_writer(tmp_path: Path) -> None:
    """Finding 6, at the store: the write that followed the empty read lost history, records and lineage."""
    from hybridctl.drivers.state import StateFileError, StateStore

    (tmp_path / "state.json").write_text("null")
    store = StateStore(tmp_path)
    with store.locked(command="apply"), pytest.raises(StateFileError, match="it holds null"):
        store.update(lambda state: state)
    assert (tmp_path / "state.json").read_text() == "null"


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_state_file_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    HOSTILE[kind](state / "state.json")
    with untouched(tmp_path, "state/lock", "state/lock.holder.json"):
        result = cli(tmp_path, "status", "--no-drift", "--state", state)
    refused(result, state / "state.json", WORDS[kind], codes={2})


def test_a_lock_holder_record_that_is_a_fifo_does_not_block(tmp_path: Path) -> None:
    """Read as no record (as an unreadable one always was), then replaced by this run's own."""
    from hybridctl.drivers.state import StateLock

    os.mkfifo(tmp_path / "lock.holder.json")
    lock = StateLock(tmp_path)
    with within(10):
        assert lock.holder() is None
        assert lock.acquire(command="apply") is None
    try:
        assert (tmp_path / "lock.holder.json").is_file() and lock.holder() is not None
    finally:
        lock.release()


@FUZZ
@given(document=st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                             lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                           max_size=3), max_leaves=8))
def test_fuzz_state_files(tmp_path_factory: pytest.TempPathFactory, document: object) -> None:
    state = tmp_path_factory.mktemp("state")
    content = json.dumps(document).encode()
    (state / "state.json").write_bytes(content)
    with untouched(state, "lock", "lock.holder.json"):
        result = cli(state, "status", "--no-drift", "--state", state)
    if result.code:
        refused(result, state / "state.json", codes={1, 2})
    else:
        assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    assert (state / "state.json").read_bytes() == content


JOURNAL_LINES = [
    b'{"event":"run-started","run":"r1","seq":1,"time":"t"}',
    b'{"event":"step-started","key":"a@1","run":"r1","seq":2,"step":"a","time":"t"}',
    b'{"event":"step-done","key":"a@1","run":"r1","seq":3,"step":"a","time":"t"}',
]


@pytest.mark.parametrize(("line", "words"), [
    (b'{"event":"step-started","key":"a@1","run":"r1","se', "not a journal record"),  # torn, then more
    (b"\x00\x17\xff\xfe binary", "not a journal record"),
    (b'{"event":"step-started","run":"r1","seq":"2","time":"t"}', "seq must be a whole number, not str"),
    (b'{"event":"step-started","run":"r1","seq":2,"time":"t","by":"me"}', "unknown field(s) 'by'"),
    (b"[1, 2]", "a record is a JSON object, not list"),
])
def test_a_journal_damaged_mid_file_is_an_error_at_its_line(tmp_path: Path, line: bytes, words: str) -> None:
    """Finding 11: a damaged line was skipped, and steps it recorded as started (or done) were forgotten."""
    from hybridctl.drivers.journal import Journal, JournalFileError

    path = tmp_path / "journal.jsonl"
    path.write_bytes(b"\n".join([JOURNAL_LINES[0], line, JOURNAL_LINES[2]]) + b"\n")
    with pytest.raises(JournalFileError) as caught:
        Journal(path).records()
    assert caught.value.message.startswith(f"{path}:2: ") and words in caught.value.message
    assert caught.value.exit_code == 1 and caught.value.location is not None and caught.value.location.line == 2


def test_apply_stops_at_a_damaged_journal_and_writes_nothing(tmp_path: Path) -> None:
    """Finding 11, end to end: a journal with a binary line mid-file still applied (the line was skipped)."""
    from support import apply_cli

    document = {
        "version": 1, "name": "lab", "regions": ["eu-users"],
        "sites": [{"name": "aws-euc1", "kind": "cloud", "provider": "aws", "region": "eu-central-1",
                   "cluster": "ml-euc1", "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
                   "pools": [{"name": "euc1-p5", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64,
                              "capacity_type": "on_demand"}]}],
        "workloads": [{"name": "chat", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 1}}],
    }
    inventory = apply_cli.write_inventory(tmp_path / "inventory.json", document)
    state = tmp_path / "state"
    assert apply_cli.run_cli("apply", inventory, "--state", state, "--auto-approve").returncode == 0
    journal = state / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[1] = b"\x00\x01binary\xff"
    journal.write_bytes(b"\n".join(lines))
    document["workloads"][0]["replicas"] = 2  # type: ignore[index]
    apply_cli.write_inventory(inventory, document)
    with untouched(tmp_path, "state/lock", "state/lock.holder.json", "state/ansible", "state/recording-cloud"):
        result = apply_cli.run_cli("apply", inventory, "--state", state, "--auto-approve")
    refused(Result(result.returncode, result.stdout, result.stderr), f"{journal}:2",
            "not a journal record: binary data", codes={1})


def test_a_binary_journal_is_an_error_even_without_a_newline(tmp_path: Path) -> None:
    """Finding 11: with no newline the whole file passed for one torn last line: no records, and apply went on."""
    from hybridctl.drivers.journal import Journal, JournalFileError

    path = tmp_path / "journal.jsonl"
    path.write_bytes(bytes(range(1, 256)).replace(b"\n", b""))
    with pytest.raises(JournalFileError, match=r"journal\.jsonl:1: not a journal record, nor the start of one torn"):
        Journal(path).records()


def test_a_torn_last_record_is_cut_off_by_the_next_append(tmp_path: Path) -> None:
    from hybridctl.drivers.journal import Journal

    path = tmp_path / "journal.jsonl"
    path.write_bytes(JOURNAL_LINES[0] + b"\n" + JOURNAL_LINES[1][:30])  # a power cut mid-append
    assert [r.seq for r in Journal(path).records()] == [1]
    Journal(path).append("r1", "step-started", step="a", key="a@1")
    assert path.read_bytes().count(b"\n") == 2 and [r.seq for r in Journal(path).records()] == [1, 2]
    path.write_bytes(JOURNAL_LINES[0] + b"\n" + b"\x00" * 40)  # a file system that grew the file, wrote nothing
    assert [r.seq for r in Journal(path).records()] == [1]
    Journal(path).append("r1", "step-started", step="a", key="a@1")
    assert b"\x00" not in path.read_bytes() and [r.seq for r in Journal(path).records()] == [1, 2]


def test_a_journal_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    from hybridctl.drivers.filereader import FileRefusedError
    from hybridctl.drivers.journal import Journal

    os.mkfifo(tmp_path / "journal.jsonl")
    with within(5), pytest.raises(FileRefusedError, match="a FIFO"):
        Journal(tmp_path / "journal.jsonl").records()


@FUZZ
@given(lines=st.lists(st.one_of(st.sampled_from(JOURNAL_LINES), st.binary(max_size=80),
                                st.text(max_size=80).map(str.encode)), max_size=6),
       end=st.booleans())
def test_fuzz_journals(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], end: bool) -> None:
    from hybridctl.drivers.journal import Journal, JournalFileError, JournalRecord

    path = tmp_path_factory.mktemp("journal") / "journal.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if end else b""))
    try:
        records = Journal(path).records()
    except JournalFileError as exc:
        assert exc.message.startswith(f"{path}:") and exc.location is not None and exc.location.line
        return
    for record in records:  # whatever is read is a record of the right shape, never a text seq
        assert isinstance(record, JournalRecord) and type(record.seq) is int and isinstance(record.run, str)


# --- runbook documents -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_runbook_document_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "state"
    (state / "runbooks").mkdir(parents=True)
    _a_state(state)  # a state (one missing is a mistyped --state): its runbook is the hostile file
    HOSTILE[kind](state / "runbooks" / "active.json")
    with untouched(tmp_path, "state/lock", "state/lock.holder.json"):
        result = cli(tmp_path, "runbook", "rollback", "--dry-run", "--state", state)
    refused(result, state / "runbooks" / "active.json", WORDS[kind], codes={2})


def _a_state(root: Path) -> None:
    """An empty state written as a command writes one, under its lock."""
    store = StateStore(root)
    store.lock.acquire(command="test")
    try:
        store.write(State())
    finally:
        store.lock.release()


@FUZZ
@given(data=st.binary(max_size=512))
def test_fuzz_runbook_documents(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    state = tmp_path_factory.mktemp("state")
    (state / "runbooks").mkdir()
    _a_state(state)
    (state / "runbooks" / "active.json").write_bytes(data)
    with untouched(state, "lock", "lock.holder.json"):
        result = cli(state, "runbook", "rollback", "--dry-run", "--state", state)
    if result.code:
        refused(result, state / "runbooks" / "active.json")
    else:
        assert "Traceback" not in result.output and "internal error" not in result.output, result.output


# --- scenario files --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "binary", "huge"])
def test_a_scenario_file_that_is_not_one(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "scenarios.yaml"
    if kind == "huge":
        sparse(path, SCENARIO_LIMIT + 1)
    elif kind == "binary":
        path.write_bytes(os.urandom(256) + b"\xff")
    else:
        HOSTILE[kind](path)
    inventory = base_file(tmp_path)
    with untouched(tmp_path):
        result = cli(tmp_path, "drill", inventory, "--scenario", path)
    refused(result, path, codes={1, 2})


@FUZZ
@given(data=st.binary(max_size=512))
def test_fuzz_scenario_files(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    root = tmp_path_factory.mktemp("scenario")
    path = root / "scenarios.yaml"
    path.write_bytes(data)
    inventory = base_file(root)
    with untouched(root):
        result = cli(root, "drill", inventory, "--scenario", path)
    if result.code:
        refused(result, path)
    else:
        assert "Traceback" not in result.output and "internal error" not in result.output, result.output


# --- bundles ---------------------------------------------------------------------------------------


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, Path]:
    """A signed bundle, and the public key that verifies it."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "weights.bin").write_bytes(b"w" * 100)
    assert cli(tmp_path, "bundle", "keygen", tmp_path / "k.pem", tmp_path / "k.pub").code == 0
    assert cli(tmp_path, "bundle", "create", bundle, "--model", "m", "--version", "1",
               "--source-commit", "abc").code == 0
    assert cli(tmp_path, "bundle", "sign", bundle, tmp_path / "k.pem").code == 0
    assert cli(tmp_path, "bundle", "verify", bundle, tmp_path / "k.pub").code == 0
    return bundle, tmp_path / "k.pub"


@pytest.mark.parametrize("name", ["manifest.json", "manifest.sig"])
@pytest.mark.parametrize("kind", ["link-to-itself", "device", "fifo", "directory"])
def test_a_bundles_own_file_that_is_not_a_regular_file(tmp_path: Path, signed: tuple[Path, Path], name: str,
                                                        kind: str) -> None:
    """Finding 10: a symbolic link was followed (to the real manifest: trusted; to /dev/zero: memory)."""
    bundle, key = signed
    path = bundle / name
    if kind == "link-to-itself":  # the very bytes, moved out of the bundle and linked back in
        path.rename(tmp_path / name)
        path.symlink_to(tmp_path / name)
    else:
        path.unlink()
        HOSTILE[kind](path)
    with untouched(tmp_path):
        result = cli(tmp_path, "bundle", "verify", bundle, key)
    words = {"link-to-itself": "a symbolic link, which hybridctl does not follow here", "device": "a symbolic link",
             "fifo": "a FIFO", "directory": "a directory"}[kind]
    refused(result, path, words, codes={1, 4})
    assert "NOT trusted" in result.output or "error" in result.output


def test_a_huge_manifest_is_refused_unread(tmp_path: Path, signed: tuple[Path, Path]) -> None:
    bundle, key = signed
    (bundle / "manifest.json").unlink()
    sparse(bundle / "manifest.json", MANIFEST_LIMIT + 1)
    with untouched(tmp_path):
        result = cli(tmp_path, "bundle", "verify", bundle, key)
    refused(result, bundle / "manifest.json", "larger than", codes={1, 4})


def test_a_key_that_is_a_device_is_refused(tmp_path: Path, signed: tuple[Path, Path]) -> None:
    bundle, _ = signed
    (tmp_path / "zero.pub").symlink_to("/dev/zero")
    with untouched(tmp_path):
        result = cli(tmp_path, "bundle", "verify", bundle, tmp_path / "zero.pub")
    refused(result, tmp_path / "zero.pub", "a character device", codes={2})


@pytest.mark.parametrize("option", ["--model", "--version"])
@pytest.mark.parametrize("value", ["1.0\n", "m\n", "a\r", "x\n\n"])
def test_a_name_with_a_trailing_newline_is_refused(tmp_path: Path, option: str, value: str) -> None:
    """Finding 10: `re.match` with `$` let `1.0\\n` through (it names a directory on every host)."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "w.bin").write_bytes(b"w")
    args = {"--model": "m", "--version": "1", option: value}
    with untouched(tmp_path):
        result = cli(tmp_path, "bundle", "create", bundle, *[x for kv in args.items() for x in kv],
                     "--source-commit", "abc")
    refused(result, option.removeprefix("--"), "must start with a letter or digit", codes={2})


def test_a_manifest_naming_a_version_with_a_newline_is_refused(tmp_path: Path) -> None:
    from hybridctl.core.deploy.bundle import BundleManifestError, parse_manifest

    document = {"format": 1, "model": "m", "version": "1.0\n", "source_commit": "abc",
                "files": [{"path": "w.bin\n", "sha256": "0" * 64, "size_bytes": 1}]}
    with pytest.raises(BundleManifestError, match="field version"):
        parse_manifest(json.dumps(document).encode(), source="m.json")
    document["version"] = "1.0"
    with pytest.raises(BundleManifestError, match=r"field files\.0\.path"):
        parse_manifest(json.dumps(document).encode(), source="m.json")


@FUZZ
@given(data=st.one_of(st.binary(max_size=512), st.dictionaries(
    st.sampled_from(["format", "model", "version", "source_commit", "files", "datasets", "rollback_to"]),
    st.one_of(st.text(max_size=12), st.integers(), st.none(), st.lists(st.text(max_size=5), max_size=2)),
    max_size=7).map(lambda d: json.dumps(d).encode())), sign=st.booleans())
def test_fuzz_bundle_manifests(tmp_path_factory: pytest.TempPathFactory, data: bytes, sign: bool) -> None:
    """Signed (the manifest's own key, so the bytes reach the parser) or not: refused, one message."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    from hybridctl.core.deploy.bundle import sign_manifest

    root = tmp_path_factory.mktemp("bundle")
    bundle = root / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_bytes(data)
    key = Ed25519PrivateKey.generate()
    (root / "k.pub").write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    if sign:
        (bundle / "manifest.sig").write_bytes(sign_manifest(key, data))
    with untouched(root):
        result = cli(root, "bundle", "verify", bundle, root / "k.pub")
    refused(result, bundle / "manifest.json" if sign else bundle, codes={1, 4})


@settings(max_examples=200, deadline=None)
@given(name=st.text(max_size=20))
def test_fuzz_bundle_names(name: str) -> None:
    """Whatever the text, a model or version name is accepted only when it is a plain single-line name."""
    import re

    from hybridctl.core.deploy.bundle import BundleManifest

    try:
        BundleManifest(model=name, version="1", source_commit="c", files=())
    except ValueError:
        return
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}", name), repr(name)


# --- synth's output directory ----------------------------------------------------------------------


def _run(stack: str) -> object:
    from hybridctl.drivers.synth import ProgramRun, Registered

    return ProgramRun("aws-gpu-pools", stack, [Registered("aws:eks/nodeGroup:NodeGroup", "ng", {"x": 1}, {})], [])


def _synth(out: Path, *stacks: str, note: Callable[[str], None] | None = None) -> Path:
    from hybridctl.drivers.synth_write import write_synth

    return write_synth(out, [_run(s) for s in stacks], plan_digest="sha256:x", inventory="test",  # type: ignore[misc]
                       note=note)


def _earlier_index(out: Path, *names: object) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.json").write_text(json.dumps({"format": "hybridctl-synth/v1",
                                                 "stacks": [{"stack": n} for n in names]}))


@pytest.mark.parametrize("name", ["..", ".", "../keep", "/etc", "a/b", "..\n", ""])
def test_synth_removes_nothing_an_index_names_outside_its_directory(tmp_path: Path, name: str) -> None:
    """Finding 1: an index.json listing `..` made synth remove the parent of --out."""
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "precious").write_text("x")
    out = tmp_path / "synth"
    _earlier_index(out, name)
    with untouched(tmp_path, "synth"):
        _synth(out, "test-aws")
    assert (tmp_path / "keep" / "precious").read_text() == "x"
    assert json.loads((out / "index.json").read_text())["stacks"][0]["stack"] == "test-aws"


def test_synth_on_the_cli_with_an_index_naming_its_parent(tmp_path: Path) -> None:
    """Finding 1, as reported: `synth --out victim/out` with victim/out/index.json listing `..`."""
    from support.examples import EXAMPLES

    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "file").write_text("precious")
    _earlier_index(victim / "out", "..")
    with untouched(tmp_path, "victim/out"):
        result = cli(tmp_path, "synth", EXAMPLES / "cloud-burst.yaml", "--out", victim / "out", seconds=300)
    assert result.code == 0, result.output
    assert (victim / "keep" / "file").read_text() == "precious"


def test_a_stale_stack_synth_did_not_write_is_left_alone(tmp_path: Path) -> None:
    """Audit finding: a directory holding only `kubernetes/`, `aws/` or `.*.tmp` files was taken for synth's
    and removed. Only a directory bearing synth's marker for that stack, holding what synth wrote, is."""
    import shutil

    out = tmp_path / "synth"
    _synth(out, "mine", "edited", "added")  # synth's: `mine` removed; `edited` and `added` changed since, so kept
    (out / "edited" / "aws" / "eks.NodeGroup" / "ng.json").write_text('{"x": 2}')
    shutil.copytree(out / "mine", out / "copied")  # synth's marker, but for another stack
    (out / "unmarked" / "kubernetes").mkdir(parents=True)  # synth's layout, no marker
    (out / "unmarked" / "kubernetes" / "prod.yaml").write_text("kind: ConfigMap")
    (out / "unmarked" / ".keep-notes.tmp").write_text("notes")
    (out / "added" / "aws" / "notes.txt").write_text("mine, not synth's")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_text("x")
    (out / "linked").symlink_to(tmp_path / "elsewhere")  # a link out of --out: neither followed nor removed
    (out / "yours").mkdir()
    (out / "yours" / "notes.txt").write_text("mine, not synth's")
    kept = ["edited", "copied", "unmarked", "added", "linked", "yours"]
    _earlier_index(out, "mine", *kept)
    notes: list[str] = []
    from hybridctl.drivers.synth_write import write_synth

    with untouched(tmp_path, "synth/index.json", "synth/mine", "synth/test-aws"):
        write_synth(out, [_run("test-aws")], plan_digest="sha256:x", inventory="test", note=notes.append)  # type: ignore[list-item]
    assert not (out / "mine").exists() and (out / "test-aws" / ".hybridctl-synth").is_file()
    assert [n.split(" ", 1)[0] for n in notes] == [str(out / name) for name in kept]
    assert all("left in place" in n for n in notes)
    assert "changed since synth wrote them (aws/eks.NodeGroup/ng.json)" in notes[0]
    assert "names 'mine'" in notes[1] and "no .hybridctl-synth marker" in notes[2] and "aws/notes.txt" in notes[3]


def test_an_interrupted_synth_is_still_synths(tmp_path: Path) -> None:
    """The marker is written first: a run killed before every file was renamed into place (temp files left,
    files missing) leaves a directory the next synth still knows as its own."""
    out = tmp_path / "synth"
    _synth(out, "test-aws", "half")
    writer = json.loads((out / "half" / ".hybridctl-synth").read_text())["writer"]  # the temp file's name has it
    (out / "half" / "aws" / "eks.NodeGroup" / "ng.json").rename(out / "half" / "aws" / "eks.NodeGroup" / f".ng.json.{writer}.tmp")
    _earlier_index(out, "test-aws", "half")
    _synth(out, "test-aws")
    assert not (out / "half").exists()


@pytest.mark.parametrize("name", [".ng.json.abcd1234.tmp", ".ng.json.abc_1234.tmp", ".ng.json.0123456789abcdef.tmp"])
def test_a_users_file_shaped_like_a_temp_file_is_not_synths(tmp_path: Path, name: str) -> None:
    """Any `.NAME.xxxxxxxx.tmp` beside a listed file was taken for an interrupted write and deleted: only the
    marker's own writer's temp files are synth's."""
    out = tmp_path / "synth"
    _synth(out, "test-aws", "half")
    users = out / "half" / "aws" / "eks.NodeGroup" / name
    users.write_text("the user's notes")
    _earlier_index(out, "test-aws", "half")
    notes: list[str] = []
    _synth(out, "test-aws", note=notes.append)
    assert users.read_text() == "the user's notes"
    assert any("holds files synth did not write" in n and name in n for n in notes), notes


@pytest.mark.parametrize("kind", ["link-out", "foreign-files", "file", "unmarked", "marker-of-another", "edited"])
def test_a_stack_directory_this_run_must_write_is_never_written_through(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "synth"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    if kind == "link-out":
        (out / "test-aws").symlink_to(tmp_path / "elsewhere")
    elif kind == "foreign-files":
        (out / "test-aws").mkdir()
        (out / "test-aws" / "notes.txt").write_text("x")
    elif kind == "unmarked":
        (out / "test-aws" / "aws").mkdir(parents=True)
    elif kind == "marker-of-another":
        _synth(out, "other")
        (out / "other").rename(out / "test-aws")
    elif kind == "edited":
        _synth(out, "test-aws")
        (out / "test-aws" / "aws" / "eks.NodeGroup" / "ng.json").write_text("{}")
    else:
        (out / "test-aws").write_text("x")
    from hybridctl.errors import UsageError

    words = "(is a symbolic link|holds files|is not a directory|was not written by synth)"
    with untouched(tmp_path), pytest.raises(UsageError, match=f"{out / 'test-aws'} {words}"):
        _synth(out, "test-aws")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_index_that_is_not_a_regular_file_lists_nothing(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "synth"
    out.mkdir()
    HOSTILE[kind](out / "index.json")
    with within(10):
        _synth(out, "test-aws")
    assert (out / "index.json").is_file() and not (out / "index.json").is_symlink()


@FUZZ
@given(names=st.lists(st.one_of(st.sampled_from(["..", ".", "../..", "/", "/tmp", "a/../..", "x", "test-aws"]),
                                st.text(alphabet="./a\n\x00-", max_size=6)), max_size=5))
def test_fuzz_synth_indexes(tmp_path_factory: pytest.TempPathFactory, names: list[str]) -> None:
    root = tmp_path_factory.mktemp("synth")
    (root / "keep").mkdir()
    (root / "keep" / "f").write_text("x")
    out = root / "a" / "out"
    _earlier_index(out, *names)
    with untouched(root, "a/out"):
        _synth(out, "test-aws")


def test_the_snapshot_never_opens_what_it_lists(tmp_path: Path) -> None:
    """The tree() snapshot itself: a FIFO, a device link and a loop are listed, never opened."""
    for kind in ("fifo", "device", "link-loop"):
        HOSTILE[kind](tmp_path / kind)
    with within(5):
        entries = tree(tmp_path)
    assert set(entries) >= {"fifo", "device", "link-loop"}


def test_concurrent_synths_into_one_out_leave_every_stack_directory_marked(tmp_path: Path) -> None:
    """Two synths into one --out at once: one removed a stack directory's marker while the other wrote its
    files, and the directory without its marker was refused by every later synth. --out is locked now: they
    take turns, and what they leave is a synth's."""
    import threading

    out = tmp_path / "synth"
    _synth(out, "test-aws", "half")
    problems: list[BaseException] = []

    def synths(stacks: tuple[str, ...]) -> None:
        try:
            for _ in range(15):
                _synth(out, *stacks)
        except BaseException as error:  # a refusal, or a directory gone from under a removal
            problems.append(error)

    runs = [threading.Thread(target=synths, args=(stacks,)) for stacks in (("test-aws", "half"), ("test-aws",))]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=300)
    assert not problems, problems
    for directory in (p for p in out.iterdir() if p.is_dir()):
        assert (directory / ".hybridctl-synth").is_file(), f"{directory} has no marker"
    _synth(out, "test-aws", "half")  # and a later synth takes them
