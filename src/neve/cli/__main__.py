"""``python -m neve.cli``: the ``neve`` command."""

from neve.cli.main import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
