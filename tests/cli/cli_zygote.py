"""A process that imports the ``neve`` command once and forks a child per run of it.

Each run of the command in the tests is then a fresh process as the installed entry
point would make it (its own environment, working folder, stdout and stderr, exit
code, exit handlers), without paying Python's imports of neve and its dependencies
again: about a second and a half per run, and the command's tests make nearly two
hundred runs.

Protocol, one JSON line each way: the parent writes ``{"args", "env", "cwd", "out",
"err"}`` on this process's stdin (``out`` and ``err`` are files the child writes its
stdout and stderr to); this process answers ``{"code": N}`` on its stdout when the
child has exited. It forks nothing else and starts no thread, so a fork is safe.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys


def _child(request: dict[str, object], answers: int) -> None:
    """Run the command in this (forked) process and never return."""
    code = 3
    try:
        os.close(answers)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            target = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(str(request["cwd"]))
        args = request["args"]
        assert isinstance(args, list)
        sys.argv = ["neve", *args]
        from neve.cli.main import main

        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the child exits either way
                stream.flush()
        os._exit(code)


def serve() -> None:
    import neve.cli.main  # noqa: F401 - the point of this process: imported once

    answers = os.dup(1)
    out = os.fdopen(answers, "w", buffering=1)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, answers)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.write(json.dumps({"code": code}) + "\n")


if __name__ == "__main__":
    serve()
