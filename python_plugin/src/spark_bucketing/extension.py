"""The Spark session extension that reads Hive-hash tables as bucketed (Scala
sources shipped in this package, in scala/): its jar, compiled against the
installed PySpark with the Scala compiler PySpark ships, and the settings that
enable it."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import re
import subprocess
import tempfile
from pathlib import Path

from spark_bucketing import contracts

EXTENSION_CLASS = contracts.EXTENSION_CLASS
# A session setting the extension reads at each plan: false plans as stock Spark does.
SWITCH = contracts.EXTENSION_SWITCH
SOURCES = Path(__file__).resolve().parent / "scala"


def pyspark_home() -> Path:
    """The installed PySpark's folder, found without importing PySpark (which costs a dbt command's start
    a few hundred milliseconds where no Spark is started)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("building the extension needs PySpark: pip install 'spark-bucketing[spark]'")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def pyspark_version() -> str:
    """The installed PySpark's version, read from its own version module (no import of PySpark)."""
    text = (pyspark_home() / "version.py").read_text()
    found = re.search(r"""__version__[^=]*=\s*["']([^"']+)["']""", text)
    if found is None:
        raise ValueError(f"cannot read PySpark's version from {pyspark_home() / 'version.py'}")
    return found.group(1)


def pyspark_jars() -> Path:
    return pyspark_home() / "jars"


# The Spark lines the extension is built for, each with its folder of SparkCompat (what differs between them).
SPARK_LINES = {(3, 5): "spark35", **{(4, minor): "spark4" for minor in range(4)}}


def spark_line(version: str) -> str:
    """The folder of the version layer for PySpark `version`; a clear error outside the lines supported."""
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) not in SPARK_LINES:
        raise ValueError(
            f"the session extension is built for Spark 3.5 and 4.0 to 4.3; this PySpark is {version}: "
            "install one of those (the package's other parts do not need the extension)"
        )
    return SPARK_LINES[(major, minor)]


def sources() -> list[Path]:
    """The shared sources and the installed PySpark's version layer."""
    return sorted(SOURCES.glob("*.scala")) + sorted((SOURCES / spark_line(pyspark_version())).glob("*.scala"))


def default_jar() -> Path:
    """Under the user's cache, named by the PySpark version and the sources, so a change of either rebuilds."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources())).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spark-bucketing"
    return cache / f"spark-bucketing-extension-{pyspark_version()}-{digest}.jar"


def build_jar(out: Path | None = None, force: bool = False) -> Path:
    """Compiles the sources into `out` (default: default_jar()) unless it is already there."""
    out = Path(out) if out is not None else default_jar()
    if out.is_file() and not force:
        return out
    jars = pyspark_jars()
    compiler = scala_compiler(jars)
    out.parent.mkdir(parents=True, exist_ok=True)
    # dbt commands started at once each find no jar: one compiles, the others wait for it and take its jar.
    with open(out.with_name(out.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.is_file() and not force:
            return out
        _compile(compiler, jars, out)
    return out


def _compile(compiler: list[Path], jars: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        built = Path(tmp) / out.name
        command = [
            "java",
            "-cp",
            os.pathsep.join(map(str, compiler)),
            "scala.tools.nsc.Main",
            "-cp",
            str(jars / "*"),
            "-d",
            str(built),
            *map(str, sources()),
        ]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0 or not built.is_file():
            raise ValueError(f"compiling the extension failed:\n{result.stdout}{result.stderr}")
        # Renamed into place: a concurrent reader sees no jar or the whole jar.
        built.replace(out)


def scala_compiler(jars: Path) -> list[Path]:
    """The Scala compiler, library and reflect jars PySpark ships, of the Scala version its Spark is built
    with (2.13 for Spark 4, 2.12 for 3.5): the extension is compiled by the same Scala as Spark's classes."""
    library = sorted(jars.glob("scala-library-2.1[0-9].*.jar"))
    if len(library) != 1:
        raise ValueError(f"expected one scala-library jar in {jars}, found {[p.name for p in library]}")
    scala = library[0].name.removeprefix("scala-library-").removesuffix(".jar")
    compiler = [jars / f"{name}-{scala}.jar" for name in ("scala-compiler", "scala-library", "scala-reflect")]
    missing = [p.name for p in compiler if not p.is_file()]
    if missing:
        raise ValueError(f"the Scala {scala} jars {missing} are not in {jars}: the extension is compiled with them")
    return compiler


def spark_settings(jar: Path) -> dict[str, str]:
    """What a session or a Thrift Server needs to load the extension. The
    driver's class path too: spark.jars alone reaches the thread that builds
    the session, but not a Thrift Server's query threads, which then fail with
    NoClassDefFoundError; spark.jars ships the jar to the executors."""
    return {
        "spark.jars": str(jar),
        "spark.driver.extraClassPath": str(jar),
        "spark.sql.extensions": EXTENSION_CLASS,
    }
