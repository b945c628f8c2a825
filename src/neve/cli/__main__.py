"""``python -m neve.cli``: the ``neve`` command."""

from neve.cli.main import main

main()
