"""File access for neve: one FileIO over pyarrow's filesystems."""

from neve.io.fileio import FileIO, InputFile

__all__ = ["FileIO", "InputFile"]
