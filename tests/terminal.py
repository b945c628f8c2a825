"""Run a command in a real terminal (tmux) and read what a person would see.

Each run gets its own tmux server (a private socket), a pane of the given size, a
scroll-back large enough for the whole run, and keeps the pane after the command ends
so the full output can be captured. ``screens`` holds the visible screen as sampled
while the command ran (to catch progress bars that vanish when a step ends).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TerminalRun", "run_in_terminal"]


@dataclass
class TerminalRun:
    exit_code: int
    text: str  # the whole output, scroll-back included, lines right-stripped
    screens: list[str] = field(default_factory=list)


def run_in_terminal(
    argv: list[str],
    *,
    cwd: str | Path,
    env: dict[str, str] | None = None,
    width: int = 200,
    height: int = 50,
    timeout: float = 900,
    sample_every: float | None = None,
) -> TerminalRun:
    tmux = shutil.which("tmux")
    assert tmux, "tmux is needed for terminal tests (.ci/run installs it)"
    socket = f"neve-test-{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory(prefix="neve-tty-") as tmp:
        conf = Path(tmp) / "tmux.conf"
        conf.write_text("set -g history-limit 100000\nset -g remain-on-exit on\n")
        status = Path(tmp) / "status"
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
        # a terminal sets its own size; variables inherited from the test process must not
        script = f"unset COLUMNS LINES; {exports}cd {shlex.quote(str(cwd))}; {shlex.join(argv)}; echo $? > {status}"
        base = [tmux, "-L", socket, "-f", str(conf)]
        subprocess.run(
            [*base, "new-session", "-d", "-x", str(width), "-y", str(height), "sh", "-c", script],
            check=True,
        )
        try:
            screens: list[str] = []
            deadline = time.monotonic() + timeout
            while not status.exists() or not status.read_text().strip():
                assert time.monotonic() < deadline, f"{argv} did not end in {timeout} s"
                if sample_every is not None:
                    screens.append(_capture(base, history=False))
                time.sleep(sample_every or 0.5)
            text = _capture(base, history=True)
            return TerminalRun(int(status.read_text().strip()), text, screens)
        finally:
            subprocess.run([*base, "kill-server"], check=False, capture_output=True)


def _capture(base: list[str], *, history: bool) -> str:
    cmd = [*base, "capture-pane", "-p", "-J"]
    if history:
        cmd += ["-S", "-", "-E", "-"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return "\n".join(line.rstrip() for line in out.splitlines()).strip("\n") + "\n"
