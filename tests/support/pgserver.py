"""A private PostgreSQL server for tests: initdb in a temporary directory, listening only on a Unix
socket there (nothing reaches beyond this machine), password authentication.

initdb and postgres refuse to run as root, and CI runs as root: then they run as Debian's
`postgres` user through runuser, in a directory that user owns. Tests skip when no server
binaries are installed (`.ci/setup.sh` installs Debian's postgresql), unless
HYBRIDCTL_REQUIRE_HOSTS asks for everything to run.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

PASSWORD = "s3cret-" + uuid.uuid4().hex[:8]
SUPERUSER = "postgres"


def _bin_dir() -> Path | None:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    found = shutil.which("pg_ctl")
    return Path(found).resolve().parent if found else None


@dataclass
class PgServer:
    bin_dir: Path
    root: Path  # data/ and the socket directory live here
    as_user: str | None  # run the server binaries as this user (when we are root)
    fsync: bool = False  # tests need no durability; the benchmark does, to be fair to the local backend

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root

    def url(self, database: str = "hybridctl", *, environment: str | None = None, password: str | None = PASSWORD,
            user: str = SUPERUSER) -> str:
        secret = f":{password}" if password is not None else ""
        query = f"host={self.socket_dir}" + (f"&environment={environment}" if environment else "")
        return f"postgresql://{user}{secret}@/{database}?{query}"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        if self.as_user:
            command = ["runuser", "-u", self.as_user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)

    def init(self) -> None:
        password_file = self.root / "pw"
        password_file.write_text(PASSWORD + "\n")
        self._chown(password_file)
        self._run("initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=scram-sha-256",
                  f"--pwfile={password_file}", "-E", "UTF8", "--locale=C")
        password_file.unlink()

    def start(self) -> None:
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}'" \
            + ("" if self.fsync else " -c fsync=off")
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self.root / "server.log"), "-o", options, "-w",
                  "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "stop", check=False)

    def restart(self) -> None:
        """Stop (ending every session) and start again; pg_ctl's own restart would forget the log file."""
        self.stop()
        self.start()

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"'.encode())

    def _chown(self, path: Path) -> None:
        if self.as_user:
            entry = pwd.getpwnam(self.as_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)


def start_server(*, fsync: bool = False) -> PgServer:
    bin_dir = _bin_dir()
    if bin_dir is None:
        if os.environ.get("HYBRIDCTL_REQUIRE_HOSTS"):
            pytest.fail("PostgreSQL server binaries are missing: run .ci/setup.sh as root")
        pytest.skip("PostgreSQL server binaries are not installed (.ci/setup.sh installs them as root)")
    as_user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root, but there is no `postgres` user to run the test server as")
        as_user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="hctl-pg-"))
    os.chmod(root, 0o755)
    server = PgServer(bin_dir, root, as_user, fsync)
    server._chown(root)
    server.init()
    server.start()
    server.create_database("hybridctl")
    return server


def remove_server(server: PgServer) -> None:
    server.stop("immediate")
    shutil.rmtree(server.root, ignore_errors=True)
