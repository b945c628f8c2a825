"""Build step of the Iceberg-Java test engine (``make java-engine``).

Run with the engine's own Python (``.venv-java/bin/python``). The Iceberg Spark
runtime jar shipped by ``snowpark-connect-deps-iceberg`` leaves out the relocated
Jackson classes (``org.apache.iceberg.shaded.com.fasterxml.jackson``) it links
against, so the first metadata read fails with ``NoClassDefFoundError``. This script
supplies them: it merges PySpark's own Jackson jars (core, databind, annotations,
without their ``META-INF``) into one jar and relocates it with Debian's jarjar, writing
``<venv>/iceberg-java/iceberg-jackson-relocated.jar``.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

JARJAR = "/usr/share/java/jarjar.jar"
RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
PARTS = ("jackson-core", "jackson-databind", "jackson-annotations")
OUT_NAME = "iceberg-jackson-relocated.jar"


def pyspark_jar(jars: Path, part: str) -> Path:
    found = sorted(glob.glob(str(jars / f"{part}-[0-9]*.jar")))
    if len(found) != 1:
        raise SystemExit(f"expected one {part}-<version>.jar in {jars}, found {found}")
    return Path(found[0])


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


if __name__ == "__main__":
    main()
