"""Trino and Hive 4, fetched from Maven Central into ~/.cache/spark-bucketing
once and checked against Maven's SHA-1s: Trino's server (its lib/ and Hive
plugin kept; one node, harness/trino_server.py), and Hive 4's serde jars,
whose classes are the bucket oracle (harness/hive4_oracle.py).

`python -m harness.engines` fetches them (scripts/test runs it) and prints
what it fetched, its size and its time."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

MAVEN = "https://repo1.maven.org/maven2"
#: Trino 476: the newest release with a server tarball and plugin archives on Maven Central.
TRINO_VERSION = "476"
TRINO_JAVA_MAJOR = 24
HIVE4_VERSION = "4.0.1"
HIVE4_JARS = ("hive-serde", "hive-common", "hive-storage-api")


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spark-bucketing"


def _maven_path(group: str, artifact: str, version: str, ext: str) -> str:
    return f"{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.{ext}"


def fetch(group: str, artifact: str, version: str, ext: str = "jar") -> Path:
    """The artifact's file in the cache, downloaded and SHA-1-checked the first time."""
    rel = _maven_path(group, artifact, version, ext)
    target = cache_dir() / "maven" / rel
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(f"{MAVEN}/{rel}.sha1", timeout=60) as r:
        want = r.read().decode().split()[0]
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha1()
    with urllib.request.urlopen(f"{MAVEN}/{rel}", timeout=600) as r, open(part, "wb") as out:
        while chunk := r.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != want:
        part.unlink()
        raise RuntimeError(f"{MAVEN}/{rel}: SHA-1 {digest.hexdigest()}, Maven Central says {want}")
    part.replace(target)
    return target


def trino_home() -> Path:
    """A Trino installation: the server's lib/ and its Hive plugin, with the plugin's hdfs/ folder.

    The full server tarball, not the server core and the plugin's archive (200 + 260 MB against 820
    MB): the plugin archive lacks hdfs/, and without it Trino reads no file of a `file:` location.
    Its native local file system lists a folder's files as `local:///...` and the Hive connector
    drops every file whose location does not start with the partition's `file:/...`: every table
    Spark wrote read as empty, with no error (seen on 476). Hadoop's file system, which Trino
    loads from hdfs/ with `fs.hadoop.enabled`, lists them as `file:` paths."""
    home = cache_dir() / f"trino-{TRINO_VERSION}"
    if (home / ".complete").exists():
        return home
    archive = fetch("io.trino", "trino-server", TRINO_VERSION, "tar.gz")
    top = f"trino-server-{TRINO_VERSION}/"
    staging = home.with_name(f"{home.name}.{os.getpid()}.part")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        wanted = [m for m in tar.getmembers() if m.name.startswith((f"{top}lib/", f"{top}plugin/hive/"))]
        # Files the archive hard-links to other plugins' copies are extracted as copies of them.
        tar.extractall(staging, members=wanted, filter="data")
    (staging / top).rename(staging / "server")
    (staging / ".complete").write_text(TRINO_VERSION)
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    archive.unlink()  # the installation is what the tests use: 820 MB less on disk
    return home


def _java_major(java_home: Path) -> int:
    for line in (java_home / "release").read_text().splitlines():
        if line.startswith("JAVA_VERSION="):
            return int(line.split("=", 1)[1].strip('"').split(".")[0])
    return 0


def trino_java() -> Path:
    """A `java` Trino runs on: TRINO_JAVA_HOME, else the newest JDK in /usr/lib/jvm of at least 24."""
    named = os.environ.get("TRINO_JAVA_HOME")
    candidates = [Path(named)] if named else sorted(Path("/usr/lib/jvm").glob("*"))
    found = [(p, _java_major(p)) for p in candidates if (p / "release").exists() and (p / "bin" / "java").exists()]
    good = sorted((major, p) for p, major in found if major >= TRINO_JAVA_MAJOR)
    if not good:
        seen = ", ".join(f"{p} ({major})" for p, major in found) or "none"
        raise RuntimeError(
            f"Trino {TRINO_VERSION} needs Java {TRINO_JAVA_MAJOR} or newer; JDKs found: {seen}. "
            "Install one (the machines here have Temurin 25 in /usr/lib/jvm/temurin-25-jdk-amd64) "
            "or point TRINO_JAVA_HOME at it."
        )
    return good[-1][1] / "bin" / "java"


def hive4_jars() -> list[Path]:
    return [fetch("org.apache.hive", name, HIVE4_VERSION) for name in HIVE4_JARS]


def main() -> None:
    start = time.perf_counter()
    home = trino_home()
    jars = hive4_jars()
    files = {f.stat().st_ino: f.stat().st_size for f in [*home.rglob("*"), *jars] if f.is_file() and not f.is_symlink()}
    size = sum(files.values())
    print(
        f"engines: Trino {TRINO_VERSION} in {home}, Hive {HIVE4_VERSION} jars; "
        f"{size / 1e6:.0f} MB on disk, {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
