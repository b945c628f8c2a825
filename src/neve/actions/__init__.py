"""What to change: actions (one staged change each) and the one commit path."""

__all__: list[str] = []
