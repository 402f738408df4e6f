"""Loopback ports for the services tests and benchmarks start: a free one,
waiting until a started process listens on its own, and stopping it."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

# The kernel hands out ports from its ephemeral range to every outgoing
# connection and every `bind(0)` listener (Spark's driver and block manager,
# JDBC and Thrift clients). A port found free there can be taken by any of
# them before the service binds it (seen in CI: the metastore server failed
# with "Address already in use"). Ports below that range are only ever bound
# on purpose; a lock file held for the process's life keeps the parallel test
# workers from picking the same one. One folder per user: another user could
# not open root's lock files.
_CLAIMS = Path(tempfile.gettempdir()) / f"sb-ports-{os.getuid()}"


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _claim(port: int) -> bool:
    """Holds `port`'s lock file until this process exits: the descriptor is never
    closed, and the OS drops the lock with the process."""
    fd = os.open(_CLAIMS / str(port), os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    if not _bindable(port):
        os.close(fd)
        return False
    return True


def free_port() -> int:
    """A loopback port nobody listens on, below the ephemeral range and claimed by no other process."""
    _CLAIMS.mkdir(exist_ok=True)
    high = min(_ephemeral_start(), 65536) - 1
    low = max(1024, high - 12000)
    for port in random.sample(range(low, high + 1), k=min(2000, high - low + 1)):
        if _claim(port):
            return port
    raise RuntimeError(f"no free port claimed in {low}-{high}: see {_CLAIMS}")


def wait_for_port(port: int, process: subprocess.Popen, log: Path, timeout: float, what: str) -> None:
    """Returns once `process` listens on `port`; raises with the end of its log if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{what} did not open port {port} in {timeout}s:\n{log.read_text()[-3000:]}")


def stop_group(process: subprocess.Popen | None, timeout: float = 30) -> None:
    """Stops a service started in a session of its own (`start_new_session`) with every process it started:
    SIGTERM to its group, SIGKILL once `timeout` has passed."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
