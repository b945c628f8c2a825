"""The one exception hierarchy of neve.

Every error neve raises on purpose derives from :class:`NeveError`. Messages say what
happened and what to do next. Errors from libraries underneath (SQLAlchemy, pyarrow,
Py4J) are translated at the boundary where they are caught, with ``raise ... from exc``.

    NeveError
    ├── NotFoundError
    │   ├── NoSuchNamespaceError
    │   ├── NoSuchTableError
    │   ├── NoSuchViewError
    │   ├── NoSuchSnapshotError          (also unknown branch / tag names)
    │   ├── NoSuchCatalogError           (no catalog of that name is configured)
    │   └── NoSuchRowError               (row ids or positions that name no live row)
    ├── AlreadyExistsError
    │   ├── NamespaceAlreadyExistsError
    │   ├── TableAlreadyExistsError
    │   └── ViewAlreadyExistsError
    ├── NamespaceNotEmptyError
    ├── ValidationError                  (bad input; nothing was changed)
    │   ├── SchemaError                  (invalid schema or schema change)
    │   ├── DataSchemaMismatchError      (written data does not fit the table)
    │   ├── ExpressionError              (a filter that does not parse or bind)
    │   ├── DuplicateKeyError            (rows whose primary key the table holds)
    │   ├── MergeEngineError             (merge-engine properties or row kinds that
    │   │                                 do not fit the table)
    │   ├── NonAppendSnapshotError       (an incremental append read met an overwrite or
    │   │                                 delete snapshot it was not told to skip)
    │   └── UnsupportedFormatVersionError
    ├── CommitError
    │   ├── CommitFailedError            (compare-and-swap lost; retried internally)
    │   ├── CommitConflictError          (a concurrent change conflicts; not retryable)
    │   └── CommitStateUnknownError      (outcome unknown; written files are kept)
    ├── CatalogNotConfiguredError        (no catalog named, none configured)
    ├── AccessDeniedError                (a catalog server refused the credentials,
    │                                     or the principal lacks the grant)
    ├── NeveIOError                      (reading or writing a file failed)
    │   └── CatalogBusyError             (the catalog database stayed locked for longer
    │                                     than its busy timeout; retryable)
    ├── StorageCredentialsError          (a catalog server could not get short-lived
    │                                     storage credentials from STS for a table)
    └── EngineSetupError                 (a Spark session or its executors lack what
                                          neve needs, or a forked process cannot run
                                          polars; nothing was written)
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "CatalogBusyError",
    "CatalogNotConfiguredError",
    "CommitConflictError",
    "CommitError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "DataSchemaMismatchError",
    "DuplicateKeyError",
    "EngineSetupError",
    "ExpressionError",
    "MergeEngineError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NeveError",
    "NeveIOError",
    "NoSuchCatalogError",
    "NoSuchNamespaceError",
    "NoSuchRowError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
    "NonAppendSnapshotError",
    "NotFoundError",
    "SchemaError",
    "StorageCredentialsError",
    "TableAlreadyExistsError",
    "UnsupportedFormatVersionError",
    "ValidationError",
    "ViewAlreadyExistsError",
]


class NeveError(Exception):
    """Base class of every error neve raises on purpose."""

    #: True when repeating the same operation against fresh state may succeed.
    retryable: bool = False


class NotFoundError(NeveError):
    """Something that was named does not exist."""


class NoSuchNamespaceError(NotFoundError):
    """The namespace does not exist."""


class NoSuchTableError(NotFoundError):
    """The table does not exist."""


class NoSuchViewError(NotFoundError):
    """The view does not exist."""


class NoSuchSnapshotError(NotFoundError):
    """The snapshot, branch or tag does not exist."""


class NoSuchCatalogError(NotFoundError):
    """No catalog of that name is configured (neve's config file, pyiceberg's
    ``.pyiceberg.yaml``); the message lists the names that are."""


class NoSuchRowError(NotFoundError):
    """Row ids or row positions asked for name no live row of the snapshot read."""


class CatalogNotConfiguredError(NeveError):
    """No catalog was given and none is configured: the message says how to name one
    (a URI, the ``NEVE_URI`` environment variable, or a config file)."""


class AccessDeniedError(NeveError):
    """A REST catalog server refused the request: no or bad credentials (HTTP 401, 419)
    or a principal without the grant it needs (403). The message is the server's."""


class AlreadyExistsError(NeveError):
    """Something that is to be created exists already."""


class NamespaceAlreadyExistsError(AlreadyExistsError):
    """The namespace exists already."""


class TableAlreadyExistsError(AlreadyExistsError):
    """The table exists already."""


class ViewAlreadyExistsError(AlreadyExistsError):
    """The view exists already."""


class NamespaceNotEmptyError(NeveError):
    """A namespace that still holds tables cannot be dropped."""


class ValidationError(NeveError, ValueError):
    """Bad input: the request was rejected and nothing was changed."""


class SchemaError(ValidationError):
    """An invalid schema, or a schema change the spec does not allow."""


class DataSchemaMismatchError(ValidationError):
    """Data to write does not fit the table's schema."""


class DuplicateKeyError(ValidationError):
    """Rows to append to a primary-key table have keys the table (or the batch itself)
    holds already; nothing was written. Upsert them instead, or set the table property
    ``write.primary-key.check=false`` for a load known to hold new keys only."""


class ExpressionError(ValidationError):
    """A filter expression does not parse or does not bind to the schema."""


class MergeEngineError(ValidationError):
    """A primary-key table's merge-engine properties do not fit its schema (an unknown
    engine or function, a function that does not fit its column, a sequence or
    aggregation on a key column), or rows given to the engine cannot be merged by it (a
    row kind that is not +I, -U, +U or -D; a retraction the engine or a column's
    function does not take). Nothing was changed; docs/MERGE-ENGINES.md lists the
    properties."""


class NonAppendSnapshotError(ValidationError):
    """An incremental append read (a scan with ``start_snapshot_id``, a streaming read
    in append mode) met an ``overwrite`` or ``delete`` snapshot: its changes are not
    appended rows. Skip such snapshots with the option
    ``streaming-skip-overwrite-snapshots`` / ``streaming-skip-delete-snapshots``, or
    read the range as a changelog."""


class UnsupportedFormatVersionError(ValidationError):
    """A metadata file or request uses a format version neve does not support."""


class CommitError(NeveError):
    """A commit did not go through."""


class CommitFailedError(CommitError):
    """The compare-and-swap of the metadata pointer lost against another writer.
    ``moved_to``: where the table's pointer was found after the loss, where the catalog
    read it (None otherwise)."""

    retryable = True

    def __init__(self, message: str, *, moved_to: str | None = None) -> None:
        super().__init__(message)
        self.moved_to = moved_to


class CommitConflictError(CommitError):
    """A concurrent commit changed what this commit depends on."""


class CommitStateUnknownError(CommitError):
    """The commit may or may not have been applied; the files it wrote are kept."""


class NeveIOError(NeveError, OSError):
    """Reading or writing a file failed."""


class CatalogBusyError(NeveIOError):
    """The catalog database stayed locked by another connection for longer than the
    busy timeout; nothing was changed. Retry, or raise the timeout."""

    retryable = True


class StorageCredentialsError(NeveError):
    """A catalog server could not get short-lived storage credentials for a table (its
    STS ``AssumeRole`` call failed or was refused); nothing was written."""


class EngineSetupError(NeveError):
    """The engine neve runs on is not set up as neve needs: a Spark session setting
    that cannot be changed at run time, executors whose Python cannot import neve, or a
    process forked after polars ran (its thread pool is not inherited), asked to run
    polars. The message names the setting, the interpreter or the start method, and how
    to fix it at launch."""
