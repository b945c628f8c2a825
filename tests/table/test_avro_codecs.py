"""``write.avro.compression-codec`` and ``write.avro.compression-level``: the manifests
and manifest lists of every commit are compressed as the table's properties say when it
commits (gzip is Avro's deflate, zstd zstandard, uncompressed null), and a table whose
manifests mix codecs plans and reads like one that does not.

The model-based test changes the codec (and level) between random operations and checks
each commit's new files against the codec then set, and the rows against a Python model,
with both manifest decoders. pyiceberg reads the deflate, zstandard and null tables
(its snappy codec needs python-snappy, which neve does not use; Iceberg-Java reads all
four in tests/interop/test_java_avro_codecs.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neve
from budget import examples
from manifest_codecs import CODECS, manifest_codecs
from manifest_decoder import manifest_decoder
from neve.errors import ValidationError
from neve.spec.manifest_writer import AvroCodec
from neve.spec.properties import TableProperties

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("part", pa.int32())])


def test_codec_of_properties() -> None:
    def of(**props: str) -> AvroCodec:
        return AvroCodec.of(TableProperties({k.replace("_", "."): v for k, v in props.items()}))

    assert AvroCodec.of(TableProperties({})) == AvroCodec("deflate", None)
    names = {c: of(**{"write_avro_compression-codec": c}).name for c in CODECS}
    assert names == CODECS
    assert of(**{"write_avro_compression-codec": "ZSTD"}) == AvroCodec("zstandard", 1)
    level = "write_avro_compression-level"
    gzip = {"write_avro_compression-codec": "gzip"}
    zstd = {"write_avro_compression-codec": "zstd"}
    assert of(**gzip, **{level: "3"}) == AvroCodec("deflate", 3)
    assert of(**gzip, **{level: "12"}) == AvroCodec("deflate", 9)
    assert of(**gzip, **{level: "-4"}) == AvroCodec("deflate", 0)
    assert of(**zstd, **{level: "30"}) == AvroCodec("zstandard", 22)
    assert of(**zstd, **{level: "-5"}) == AvroCodec("zstandard", -5)
    assert of(**{"write_avro_compression-codec": "snappy", level: "5"}) == AvroCodec("snappy")
    # a value another engine stored that neve cannot use reads as the default
    assert of(**{"write_avro_compression-codec": "lz4"}) == AvroCodec("deflate", None)


def test_bad_values_are_refused_and_change_nothing(tmp_path: Path) -> None:
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("n")
    with pytest.raises(ValidationError, match="gzip, zstd, snappy, uncompressed"):
        cat.create_table(("n", "t"), SCHEMA, properties={"write.avro.compression-codec": "lz4"})
    assert cat.list_tables("n") == []
    t = cat.create_table(("n", "t"), SCHEMA)
    before = t.metadata_location
    for key, value in (
        ("write.avro.compression-codec", "deflate"),
        ("write.avro.compression-level", "high"),
    ):
        with pytest.raises(ValidationError, match=key):
            t.set_properties({key: value})
        assert t.refresh().metadata_location == before


@pytest.mark.parametrize("codec", ["gzip", "zstd", "uncompressed"])
def test_pyiceberg_reads_the_codecs(codec: str, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    uri = f"sqlite:///{tmp_path}/c.db"
    cat = neve.connect(uri, warehouse=str(tmp_path / "wh"), name="c")
    cat.create_namespace("n")
    t = cat.create_table(
        ("n", "t"),
        SCHEMA,
        partition_by=["part"],
        properties={"write.avro.compression-codec": codec, "write.delete.mode": "merge-on-read"},
    )
    rows = [{"id": i, "part": i % 20} for i in range(60)]
    t.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    t.refresh().delete("id in (4, 25)")
    assert set(manifest_codecs(t)) and set(manifest_codecs(t).values()) == {CODECS[codec]}
    theirs = SqlCatalog("c", uri=uri, warehouse=f"file://{tmp_path}/wh").load_table("n.t")
    ids = sorted(theirs.scan().to_arrow().column("id").to_pylist())
    assert ids == [i for i in range(60) if i not in (4, 25)]


OPS = st.lists(
    st.tuples(
        st.sampled_from([*CODECS, None]),  # None: the property removed (gzip)
        st.sampled_from([None, "1", "9", "-3", "40"]),  # the level (None: removed)
        st.sampled_from(["append", "append", "delete", "overwrite"]),
        st.integers(0, 2**16),
    ),
    min_size=1,
    max_size=6,
)
CODEC_KEY, LEVEL_KEY = "write.avro.compression-codec", "write.avro.compression-level"


@pytest.mark.property
@settings(max_examples=examples(12, 300))
@given(ops=OPS, decoder=st.sampled_from(["columnar", "fastavro"]))
def test_random_codecs_against_a_model(
    ops: list[tuple[str | None, str | None, str, int]],
    decoder: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("codecs")
    cat = neve.connect(f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    cat.create_namespace("n")
    t = cat.create_table(
        ("n", "t"),
        SCHEMA,
        partition_by=["part"],
        # merges rewrite manifests of earlier codecs in the current one
        properties={
            "commit.manifest.min-count-to-merge": "3",
            "write.delete.mode": "merge-on-read",
        },
    )
    model: dict[int, int] = {}  # id -> part
    next_id = 0
    for codec, level, op, seed in ops:
        rnd = random.Random(seed)
        t.set_properties({k: v for k, v in ((CODEC_KEY, codec), (LEVEL_KEY, level)) if v})
        t.remove_properties(*(k for k, v in ((CODEC_KEY, codec), (LEVEL_KEY, level)) if not v))
        t = t.refresh()
        before = manifest_codecs(t)
        if op == "append" or not model:
            n = rnd.randint(1, 45)  # up to 45 rows in up to 20 partitions: one file each
            rows = {next_id + i: rnd.randrange(20) for i in range(n)}
            t.append(pa.Table.from_pylist([{"id": i, "part": p} for i, p in rows.items()], SCHEMA))
        elif op == "delete":
            gone = sorted(rnd.sample(sorted(model), max(1, len(model) // 4)))
            t.delete(f"id in ({', '.join(map(str, gone))})")
            model = {i: p for i, p in model.items() if i not in gone}
            rows = {}
        else:
            part = rnd.randrange(20)
            rows = {next_id + i: part for i in range(rnd.randint(1, 5))}
            data = pa.Table.from_pylist([{"id": i, "part": part} for i in rows], SCHEMA)
            t.overwrite(data, f"part = {part}")
            model = {i: p for i, p in model.items() if p != part}
        model |= rows
        next_id += len(rows)
        t = t.refresh()
        new = {v for name, v in manifest_codecs(t).items() if name not in before}
        assert new == {CODECS[codec or "gzip"]}, (codec, op)
        with manifest_decoder(decoder):
            got = t.scan().to_arrow()
        assert sorted(
            zip(got.column("id").to_pylist(), got.column("part").to_pylist(), strict=True)
        ) == sorted(model.items())
