"""The one exception type the CLI and HTTP layers turn into a single clear line."""


class RagdbError(Exception):
    """A problem the user can act on; its message is shown as is, without a traceback."""


class MissingIndexError(RagdbError):
    """Raised where a command needs an index that has not been built."""
