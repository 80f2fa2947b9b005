"""A lab of real SSH hosts on this machine, for Ansible to configure. No pytest dependency.

Each host is an overlay of the cached Debian root filesystem (see rootfs.py), with its own
network, mount, UTS and PID namespaces, running sshd chrooted into the overlay. Hosts hang
off a Linux bridge inside a *controller* network namespace; Ansible (or the hybridctl CLI)
must run inside that namespace to reach them: ``with lab.controller(): ...`` moves the
calling thread there, so every subprocess it starts inherits it. Addresses live only inside
these namespaces (10.231.0.0/24 by default); nothing here touches the machine's own network.

Usage::

    lab = HostLab()
    lab.open()                       # needs root; builds the root filesystem on first use
    try:
        h1, h2 = lab.start(2, gpus={"h1": FakeGpus(8)})
        with lab.controller():
            subprocess.run(["ansible-playbook", ...])
    finally:
        lab.close()                  # kills every process, deletes namespaces and mounts
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import psutil

from . import fake_gpu, netns, rootfs
from .fake_gpu import FakeGpus

STATE_ROOT = Path(tempfile.gettempdir()) / "hybridctl-hosts"
_FIRST_HOST_OCTET = 11
_MAX_HOSTS = 200
_READY_TIMEOUT_S = 15.0


class LabUnavailable(RuntimeError):
    """The lab cannot run on this machine (not root, a tool missing); the message says which."""


def missing_prerequisites() -> list[str]:
    """What this machine lacks to run the lab; empty when it can."""
    missing = []
    if os.geteuid() != 0:
        missing.append("must run as root (network namespaces, mounts, chroot)")
    for tool in ("ip", "unshare", "nsenter", "mount", "ssh-keygen", "ssh"):
        if shutil.which(tool) is None:
            missing.append(f"`{tool}` is not installed")
    cached = (rootfs.rootfs_path() / ".hybridctl-rootfs").is_file()
    if not cached and shutil.which("debootstrap") is None:
        missing.append("`debootstrap` is not installed and no cached root filesystem exists")
    return missing


@dataclass(eq=False)
class TestHost:
    """One running host. ``root`` is its filesystem as seen from outside, for tests to read or edit."""

    __test__ = False  # not a pytest test class

    name: str
    address: str
    port: int
    user: str
    root: Path
    netns: str
    slot: int
    host_key_line: str
    _process: subprocess.Popen[bytes] = field(repr=False)
    _init_pid: int = field(repr=False)
    _log: Path = field(repr=False)
    _controller_netns: str = field(repr=False)

    @property
    def init_pid(self) -> int:
        """The host's PID 1 (sshd) as seen from this machine."""
        return self._init_pid

    def exec(
        self, command: str, *, check: bool = True, timeout_s: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run a shell command inside the host: its namespaces, its root filesystem."""
        argv = [
            "nsenter",
            "-t",
            str(self._init_pid),
            "-m",
            "-u",
            "-p",
            "-n",
            "-r",
            "-w",
            "/bin/sh",
            "-c",
            command,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{self.name}: `{command}` failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def link_down(self) -> None:
        """Cut the host's network link (inside its namespace): established connections stall."""
        netns.run(["ip", "-n", self.netns, "link", "set", "eth0", "down"])

    def link_up(self) -> None:
        netns.run(["ip", "-n", self.netns, "link", "set", "eth0", "up"])
        # Attempts made while the link was down left FAILED neighbour entries, which answer
        # "No route to host" at once until they expire; forget them.
        netns.run(["ip", "-n", self._controller_netns, "neigh", "flush", "to", self.address], check=False)
        netns.run(["ip", "-n", self.netns, "neigh", "flush", "dev", "eth0"], check=False)

    def regenerate_host_key(self) -> str:
        """Give sshd a new host key; the lab's known_hosts keeps the old one. Returns the new public key."""
        for old in (self.root / "etc/ssh").glob("ssh_host_*"):
            old.unlink()
        public = _keygen(self.root / "etc/ssh/ssh_host_ed25519_key")
        listening = self._log.read_text().count("Server listening")
        # sshd re-executes itself on SIGHUP, reading its keys again; its pid stays.
        os.kill(self._init_pid, signal.SIGHUP)
        _wait_for(
            lambda: self._log.read_text().count("Server listening") > listening, f"{self.name} sshd restart"
        )
        return public

    def set_gpus(self, gpus: FakeGpus | None) -> None:
        """Install (or, with None, remove) the fake nvidia-smi."""
        if gpus is None:
            (self.root / fake_gpu.SCRIPT_PATH).unlink(missing_ok=True)
            (self.root / fake_gpu.CONFIG_PATH).unlink(missing_ok=True)
            (self.root / fake_gpu.RUNTIME_PATH).unlink(missing_ok=True)
        else:
            fake_gpu.install(self.root, gpus)

    def ansible_vars(self) -> dict[str, str | int]:
        return {
            "ansible_host": self.address,
            "ansible_port": self.port,
            "ansible_user": self.user,
            "ansible_python_interpreter": "/usr/bin/python3",
        }


class HostLab:
    """Starts and stops test hosts; owns the controller namespace, the client key and known_hosts."""

    _count = 0

    def __init__(self, *, subnet: str = "10.231.0", state_root: Path = STATE_ROOT) -> None:
        self.subnet = subnet
        self._state_root = state_root
        self._hosts: dict[str, TestHost] = {}
        self._opened = False
        self.run_dir = Path()
        # Namespace names carry the owner's pid (for stale cleanup) and a per-process lab number.
        HostLab._count += 1
        self._ns_prefix = f"{netns.NETNS_PREFIX}{os.getpid()}-{HostLab._count}"
        self.controller_netns = f"{self._ns_prefix}-ctl"

    @property
    def controller_address(self) -> str:
        return f"{self.subnet}.1"

    @property
    def known_hosts_path(self) -> Path:
        return self.run_dir / "known_hosts"

    @property
    def client_key_path(self) -> Path:
        return self.run_dir / "id_ed25519"

    @property
    def hosts(self) -> list[TestHost]:
        return list(self._hosts.values())

    def open(self) -> None:
        if self._opened:
            return
        missing = missing_prerequisites()
        if missing:
            raise LabUnavailable("; ".join(missing))
        self._rootfs = rootfs.ensure_rootfs()
        netns.clean_stale(self._state_root)
        self._state_root.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=self._state_root))
        self._opened = True
        atexit.register(self.close)
        _install_signal_safety_net(self.close)
        _keygen(self.client_key_path)
        self.known_hosts_path.write_text("")
        netns.add_netns(self.controller_netns)
        ctl = ["ip", "-n", self.controller_netns]
        netns.run([*ctl, "link", "add", "br0", "type", "bridge"])
        netns.run([*ctl, "addr", "add", f"{self.controller_address}/24", "dev", "br0"])
        netns.run([*ctl, "link", "set", "br0", "up"])

    @contextlib.contextmanager
    def controller(self) -> Iterator[None]:
        """Run the body with the calling thread (and its future subprocesses) in the controller netns."""
        with netns.inside_netns(self.controller_netns):
            yield

    def controller_argv(self, argv: Sequence[str]) -> list[str]:
        """A command line that runs argv inside the controller netns, for callers that stay outside."""
        return ["ip", "netns", "exec", self.controller_netns, *argv]

    def start(
        self,
        count: int,
        names: Sequence[str] | None = None,
        gpus: Mapping[str, FakeGpus | int] | None = None,
    ) -> list[TestHost]:
        """Start `count` hosts (in parallel) and add their keys to known_hosts.

        gpus maps a host name to its fake GPUs (a FakeGpus, or a count of H100s); other hosts have none.
        """
        if not self._opened:
            self.open()
        if names is not None and len(names) != count:
            raise ValueError(f"{count} hosts but {len(names)} names")
        free = [s for s in range(1, _MAX_HOSTS + 1) if s not in {h.slot for h in self._hosts.values()}]
        slots = free[:count]
        host_names = list(names) if names is not None else [f"h{slot}" for slot in slots]
        clash = set(host_names) & set(self._hosts)
        if clash or len(set(host_names)) != count:
            raise ValueError(f"host names must be unique: {sorted(clash) or host_names}")
        pending = []
        attempted: list[int] = []
        try:
            for slot, name in zip(slots, host_names, strict=True):
                attempted.append(slot)
                wanted = (gpus or {}).get(name)
                host_gpus = FakeGpus(wanted) if isinstance(wanted, int) else wanted
                pending.append(self._launch(slot, name, host_gpus))
            started = [self._await_ready(*launch) for launch in pending]
        except BaseException:
            processes = {launch[0]: launch[2] for launch in pending}
            for slot in attempted:
                self._discard(slot, processes.get(slot))
            raise
        for host in started:
            self._hosts[host.name] = host
        self._write_known_hosts()
        return started

    def stop(self, hosts: Sequence[TestHost] | None = None) -> None:
        """Stop some hosts (default: all): kill their processes, delete namespace and overlay."""
        for host in list(hosts if hosts is not None else self._hosts.values()):
            self._hosts.pop(host.name, None)
            self._discard(host.slot, host._process)
        if self._opened:
            self._write_known_hosts()

    def close(self) -> None:
        """Tear everything down. Safe to call twice, and after a failed start."""
        if not self._opened:
            return
        self._opened = False
        try:
            self.stop()
        finally:
            netns.delete_netns(self.controller_netns)
            netns.unmount_tree(self.run_dir)
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def inventory(self, hosts: Sequence[TestHost] | None = None, *, group: str = "lab") -> dict[str, object]:
        """An Ansible YAML inventory (as a dict) of these hosts, in one group."""
        chosen = hosts if hosts is not None else self.hosts
        return {"all": {"children": {group: {"hosts": {h.name: h.ansible_vars() for h in chosen}}}}}

    # -- internals -------------------------------------------------------------------------

    def _host_dir(self, slot: int) -> Path:
        return self.run_dir / f"h{slot}"

    def _host_netns(self, slot: int) -> str:
        return f"{self._ns_prefix}-h{slot}"

    def _launch(
        self, slot: int, name: str, gpus: FakeGpus | None
    ) -> tuple[int, str, subprocess.Popen[bytes], str, Path]:
        address = f"{self.subnet}.{_FIRST_HOST_OCTET + slot - 1}"
        base = self._host_dir(slot)
        merged = base / "merged"
        for sub in ("upper", "work", "merged"):
            (base / sub).mkdir(parents=True)
        overlay = f"lowerdir={self._rootfs},upperdir={base / 'upper'},workdir={base / 'work'}"
        netns.run(["mount", "-t", "overlay", "overlay", "-o", overlay, str(merged)])
        _configure_root(merged, name, address, self.client_key_path)
        host_key_line = f"{address} {_keygen(merged / 'etc/ssh/ssh_host_ed25519_key')}"
        if gpus is not None:
            fake_gpu.install(merged, gpus)

        ns = self._host_netns(slot)
        netns.add_netns(ns)
        ctl = ["ip", "-n", self.controller_netns]
        netns.run([*ctl, "link", "add", f"v{slot}", "type", "veth", "peer", "name", "eth0", "netns", ns])
        netns.run([*ctl, "link", "set", f"v{slot}", "master", "br0", "up"])
        netns.run(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0"])
        netns.run(["ip", "-n", ns, "link", "set", "eth0", "up"])

        # Private mount propagation (unshare's default) keeps proc/dev/sys inside the host's namespace.
        boot = (
            f"hostname {name} && mount -t proc proc {merged}/proc && mount --rbind /dev {merged}/dev"
            f" && mount -t sysfs sysfs {merged}/sys && exec chroot {merged} /usr/sbin/sshd -D -e"
        )
        log = base / "sshd.log"
        with open(log, "wb") as out:
            # A new session: a Ctrl-C aimed at the test run must not reach the hosts; close() ends them.
            process = subprocess.Popen(
                ["ip", "netns", "exec", ns, "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child",
                 "/bin/sh", "-c", boot],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        return slot, name, process, host_key_line, log

    def _await_ready(
        self, slot: int, name: str, process: subprocess.Popen[bytes], host_key_line: str, log: Path
    ) -> TestHost:
        def listening() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"sshd of {name} exited ({process.returncode}): {log.read_text()[-2000:]}")
            return "Server listening" in log.read_text()

        _wait_for(listening, f"sshd of {name}")
        children = psutil.Process(process.pid).children()
        if len(children) != 1:
            raise RuntimeError(f"{name}: expected one init process under unshare, found {children}")
        return TestHost(
            name=name, address=host_key_line.split()[0], port=22, user="root", root=self._host_dir(slot) / "merged",
            netns=self._host_netns(slot), slot=slot, host_key_line=host_key_line,
            _process=process, _init_pid=children[0].pid, _log=log, _controller_netns=self.controller_netns,
        )  # fmt: skip

    def _discard(self, slot: int, process: subprocess.Popen[bytes] | None) -> None:
        if process is not None:
            # Kill the host's PID 1 first: the kernel then ends its whole PID namespace, and
            # unshare (our child) reaps it. Killed the other way round, PID 1 would be orphaned
            # to this machine's init, which need not reap it.
            with contextlib.suppress(psutil.NoSuchProcess):
                for init in psutil.Process(process.pid).children():
                    init.kill()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        netns.delete_netns(self._host_netns(slot))
        # A deleted namespace's devices are destroyed asynchronously; delete our veth end now,
        # so that the next host in this slot can create it again.
        netns.run(["ip", "-n", self.controller_netns, "link", "del", f"v{slot}"], check=False)
        base = self._host_dir(slot)
        netns.unmount_tree(base)
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)

    def _write_known_hosts(self) -> None:
        text = "".join(h.host_key_line + "\n" for h in self._hosts.values())
        partial = self.known_hosts_path.with_suffix(".tmp")
        partial.write_text(text)
        partial.replace(self.known_hosts_path)


def _keygen(path: Path) -> str:
    """Create an Ed25519 key pair at path; return the public key line (type and key)."""
    netns.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)])
    return " ".join(path.with_name(path.name + ".pub").read_text().split()[:2])


def _configure_root(root: Path, name: str, address: str, client_key: Path) -> None:
    (root / "etc/hostname").write_text(f"{name}\n")
    (root / "etc/hosts").write_text(f"127.0.0.1 localhost\n{address} {name}\n")
    # Without a resolver that answers at once, fact gathering waits 11 s on DNS timeouts.
    (root / "etc/resolv.conf").write_text("nameserver 127.0.0.1\n")
    (root / "etc/ssh/sshd_config").write_text(
        f"ListenAddress {address}\n"
        "HostKey /etc/ssh/ssh_host_ed25519_key\n"
        "PermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "UsePAM no\n"
        "UseDNS no\n"
        "PidFile none\n"
        "MaxStartups 200:30:400\n"
        "MaxSessions 200\n"
        "Subsystem sftp /usr/lib/openssh/sftp-server\n"
    )
    ssh_dir = root / "root/.ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    authorized = ssh_dir / "authorized_keys"
    authorized.write_text(client_key.with_name(client_key.name + ".pub").read_text())
    authorized.chmod(0o600)


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = _READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.02)


def _install_signal_safety_net(cleanup: Callable[[], None]) -> None:
    """On SIGTERM/SIGHUP, tear the lab down before dying (atexit alone does not run on signals)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        del frame
        with contextlib.suppress(Exception):
            cleanup()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError):  # only the main thread may set handlers
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, handler)
