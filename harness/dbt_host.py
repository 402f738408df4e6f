"""One process that runs dbt commands one after another, in one JVM.

The many-writers tests need their concurrent runs in processes of their own,
each with its own JVM; their other commands (the first build, `dbt test`
after a round, a source table's rebuild) run one at a time and only need to
see the catalog as those processes left it. A JVM costs such a test more
than the command, so those commands go to this process: the parent writes a
command's arguments as a JSON line to its stdin, it runs them with dbtRunner
and answers with a JSON line (after MARKER) holding dbt's console output
and whether the command succeeded.

Its Spark session caches no table relation and no file listing
(FRESH_READS): each command reads the tables as the other processes left
them, as a new process would.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

MARKER = "@@dbt-host@@ "

#: Settings for the host's target: nothing read from the catalog or the files outlives a query.
FRESH_READS = {
    "spark.sql.filesourceTableRelationCacheSize": "0",
    "spark.sql.hive.filesourcePartitionFileCacheSize": "0",
}


class DbtHost:
    """The parent's side: a host process started in `cwd` with `env`."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.dbt_host"],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.noise: list[str] = []

    def invoke(self, args: list[str]) -> tuple[bool, str]:
        """dbt's answer to `args`: (success, console output)."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith(MARKER):
                reply = json.loads(line[len(MARKER) :])
                return reply["ok"], reply["output"]
            self.noise.append(line)  # the JVM's own lines, kept for the message below
        raise RuntimeError(f"the dbt host exited {self.proc.wait()}:\n{''.join(self.noise[-100:])}")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def serve() -> None:
    from dbt.cli.main import dbtRunner

    answers = sys.stdout
    for line in sys.stdin:
        output = io.StringIO()
        # dbt's console logger writes to the sys.stdout of the moment it is set up, at each invocation.
        with contextlib.redirect_stdout(output):
            try:
                ok = dbtRunner().invoke(json.loads(line)).success
            except Exception as e:  # noqa: BLE001 (reported to the parent, which fails the test)
                ok, output = False, io.StringIO(f"{output.getvalue()}\n{type(e).__name__}: {e}")
        answers.write(MARKER + json.dumps({"ok": ok, "output": output.getvalue()}) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
