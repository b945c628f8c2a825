"""neve's REST client sends a commit again, with the same Idempotency-Key, when the
answer is lost on the way back (a proxy between client and server drops it after the
server applied the commit): the commit is applied once and the client's commit
succeeds. Without idempotency keys the client says the outcome is unknown."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest

import neve
from neve.errors import CommitStateUnknownError
from restserver import NeveServer

SCHEMA = pa.schema([pa.field("id", pa.int64())])


class DroppingProxy:
    """A loopback HTTP/1.1 proxy, one request per connection. ``drop`` answers of
    requests whose first line contains it are swallowed (the connection just closes)
    after the server sent them; ``keys`` collects the Idempotency-Keys it saw."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.drop: str | None = None
        self.dropped = 0
        self.keys: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(client,), daemon=True).start()

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            body += conn.recv(65536)
        return head + b"\r\n\r\n" + body

    def _one(self, client: socket.socket) -> None:
        with client:
            request = self._read_request(client)
            if not request:
                return
            head, _, body = request.partition(b"\r\n\r\n")
            lines = [
                line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")
            ]
            for line in lines:
                if line.lower().startswith(b"idempotency-key:"):
                    self.keys.append(line.split(b":", 1)[1].strip().decode())
            lines.append(b"Connection: close")
            with socket.create_connection(self.upstream) as up:
                up.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
                answer = b""
                while chunk := up.recv(65536):
                    answer += chunk
            first = lines[0].decode("latin-1")
            if self.drop is not None and self.drop in first and self.dropped == 0:
                self.dropped += 1
                return  # the server answered; the client never hears it
            client.sendall(answer)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def proxy(secured: NeveServer) -> Iterator[DroppingProxy]:
    p = DroppingProxy(secured.url)
    yield p
    p.close()


def test_a_lost_answer_is_retried_with_the_same_key_and_applied_once(
    secured: NeveServer, proxy: DroppingProxy
) -> None:
    direct = neve.connect(secured.url, credential="admin:admin-secret")
    ns = f"r{uuid.uuid4().hex[:8]}"
    direct.create_namespace(ns)
    direct.create_table(f"{ns}.t", SCHEMA)
    via = neve.connect(proxy.url, credential="admin:admin-secret")
    table = via.load_table(f"{ns}.t")
    proxy.drop = f"POST /v1/namespaces/{ns}/tables/t "
    proxy.keys.clear()
    table.append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    assert proxy.dropped == 1
    assert len(proxy.keys) == 2 and proxy.keys[0] == proxy.keys[1]  # the same key, twice
    after = direct.load_table(f"{ns}.t")
    assert len(after.snapshots()) == 1  # applied once
    assert after.scan().count() == 3
    assert table.metadata_location == after.metadata_location


def test_without_idempotency_keys_a_lost_answer_is_unknown(
    secured: NeveServer, proxy: DroppingProxy
) -> None:
    direct = neve.connect(secured.url, credential="admin:admin-secret")
    ns = f"u{uuid.uuid4().hex[:8]}"
    direct.create_namespace(ns)
    direct.create_table(f"{ns}.t", SCHEMA)
    via = neve.connect(proxy.url, credential="admin:admin-secret")
    via.http.idempotency = False  # as against a server that does not keep keys
    table = via.load_table(f"{ns}.t")
    proxy.drop = f"POST /v1/namespaces/{ns}/tables/t "
    with pytest.raises(CommitStateUnknownError, match="answer was lost"):
        table.set_properties({"k": "v"})
    # it was applied, once; the client did not send it again
    assert direct.load_table(f"{ns}.t").properties["k"] == "v"
    assert len(direct.load_table(f"{ns}.t").metadata.metadata_log) == 1
