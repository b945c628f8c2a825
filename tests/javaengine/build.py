"""Build step of the Iceberg-Java test engine (``make java-engine``).

Run with the engine's own Python (``.venv-java/bin/python``). The Iceberg Spark
runtime jar shipped by ``snowpark-connect-deps-iceberg`` leaves out two sets of
relocated classes it links against, and this script supplies both:

- Jackson (``org.apache.iceberg.shaded.com.fasterxml.jackson``), without which the
  first metadata read fails with ``NoClassDefFoundError``: PySpark's own Jackson jars
  (core, databind, annotations, without their ``META-INF``) merged and relocated with
  Debian's jarjar into ``<venv>/iceberg-java/iceberg-jackson-relocated.jar``.
- Apache HttpClient 5 (``org.apache.iceberg.shaded.org.apache.hc``), which the REST
  catalog client needs: Debian's httpclient5 and httpcore5 (5.2.1) relocated into
  ``iceberg-httpclient-relocated.jar``, with two classes of ours compiled here with
  javac (``java/``): a ``StringEntity`` that encodes text as UTF-8 as httpcore5 5.4+
  does (5.2.1's turns every non-Latin-1 character a client sends into '?'), and the
  ``TlsSocketStrategy`` interface of httpclient5 5.4 that Iceberg's client names.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

JARJAR = "/usr/share/java/jarjar.jar"
RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
PARTS = ("jackson-core", "jackson-databind", "jackson-annotations")
OUT_NAME = "iceberg-jackson-relocated.jar"
HTTP_RULE = "rule org.apache.hc.** org.apache.iceberg.shaded.org.apache.hc.@1\n"
HTTP_JARS = tuple(
    Path("/usr/share/java") / name
    for name in ("httpclient5.jar", "httpcore5.jar", "httpcore5-h2.jar")
)
HTTP_OUT_NAME = "iceberg-httpclient-relocated.jar"
JAVA_SOURCES = Path(__file__).with_name("java")


def pyspark_jar(jars: Path, part: str) -> Path:
    found = sorted(glob.glob(str(jars / f"{part}-[0-9]*.jar")))
    if len(found) != 1:
        raise SystemExit(f"expected one {part}-<version>.jar in {jars}, found {found}")
    return Path(found[0])


def merge(sources: list[Path], extra: Path | None, merged: Path) -> None:
    """One jar of ``sources`` (without ``META-INF``), the classes under ``extra``
    taking the place of theirs."""
    seen: set[str] = set()
    with zipfile.ZipFile(merged, "w", zipfile.ZIP_DEFLATED) as dst:
        if extra is not None:
            for path in sorted(extra.rglob("*.class")):
                name = path.relative_to(extra).as_posix()
                seen.add(name)
                dst.write(path, name)
        for jar in sources:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    name = info.filename
                    if name.startswith("META-INF/") or name == "module-info.class":
                        continue
                    if info.is_dir() or name in seen:
                        continue
                    seen.add(name)
                    dst.writestr(name, src.read(info))


def relocate(rule: str, merged: Path, out: Path, wanted: list[str], tmp: Path) -> int:
    rules = tmp / f"{out.name}.rules"
    rules.write_text(rule)
    tmp_out = out.with_name(out.name + ".tmp")
    subprocess.run(
        ["java", "-jar", JARJAR, "process", str(rules), str(merged), str(tmp_out)], check=True
    )
    with zipfile.ZipFile(tmp_out) as check:
        names = set(check.namelist())
    missing = [w for w in wanted if w not in names]
    if missing:
        raise SystemExit(f"relocation failed: {tmp_out} lacks {missing}")
    os.replace(tmp_out, out)
    return len(names)


def build_httpclient(out_dir: Path) -> None:
    """Debian's httpclient5/httpcore5, our two classes in place, relocated."""
    missing = [str(j) for j in HTTP_JARS if not j.is_file()]
    if missing:
        raise SystemExit(
            f"{missing} missing: install Debian's libhttpclient5-java and libhttpcore5-java"
        )
    if not shutil.which("javac"):
        raise SystemExit("javac is missing: install openjdk-17-jdk-headless")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        classes = tmp / "classes"
        sources = [str(p) for p in sorted(JAVA_SOURCES.rglob("*.java"))]
        classpath = os.pathsep.join(str(j) for j in HTTP_JARS)
        subprocess.run(
            ["javac", "-nowarn", "--release", "8", "-cp", classpath, "-d", str(classes), *sources],
            check=True,
        )
        merged = tmp / "httpclient.jar"
        merge(list(HTTP_JARS), classes, merged)
        prefix = "org/apache/iceberg/shaded/org/apache/hc/"
        count = relocate(
            HTTP_RULE,
            merged,
            out_dir / HTTP_OUT_NAME,
            [
                prefix + "core5/http/io/entity/StringEntity.class",
                prefix + "client5/http/ssl/TlsSocketStrategy.class",
                prefix + "client5/http/impl/classic/HttpClientBuilder.class",
            ],
            tmp,
        )
    print(f"wrote {out_dir / HTTP_OUT_NAME} ({count} entries)")


def main() -> None:
    import pyspark

    venv = Path(sys.prefix)
    out_dir = venv / "iceberg-java"
    out_dir.mkdir(exist_ok=True)
    jars = Path(pyspark.__file__).parent / "jars"
    if not os.path.isfile(JARJAR):
        raise SystemExit(f"{JARJAR} is missing: install Debian's libjarjar-java")
    with tempfile.TemporaryDirectory() as tmp:
        merged, rules = Path(tmp) / "jackson.jar", Path(tmp) / "rules.txt"
        rules.write_text(RULE)
        seen: set[str] = set()
        with zipfile.ZipFile(merged, "w", zipfile.ZIP_DEFLATED) as dst:
            for part in PARTS:
                with zipfile.ZipFile(pyspark_jar(jars, part)) as src:
                    for info in src.infolist():
                        name = info.filename
                        if name.startswith("META-INF/") or name == "module-info.class":
                            continue
                        if info.is_dir() or name in seen:
                            continue
                        seen.add(name)
                        dst.writestr(name, src.read(info))
        result = out_dir / OUT_NAME
        tmp_out = out_dir / (OUT_NAME + ".tmp")
        subprocess.run(
            ["java", "-jar", JARJAR, "process", str(rules), str(merged), str(tmp_out)],
            check=True,
        )
        with zipfile.ZipFile(tmp_out) as check:
            names = check.namelist()
        wanted = "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class"
        if wanted not in names or any(n.startswith("com/fasterxml/") for n in names):
            raise SystemExit(f"relocation failed: {tmp_out} lacks {wanted}")
        os.replace(tmp_out, result)
    print(f"wrote {result} ({len(names)} entries)")
    build_httpclient(out_dir)


if __name__ == "__main__":
    main()
