"""The one exception type the CLI and HTTP layers turn into a single clear line."""


class RagdbError(Exception):
    """A problem the user can act on; its message is shown as is, without a traceback."""


class MissingIndexError(RagdbError):
    """Raised where a command needs an index that has not been built."""


class ForeignDatabaseError(MissingIndexError):
    """The file is some other application's database: as far as ragdb goes, there is no index
    there, and nothing may be written to it."""


class DiskFullError(RagdbError):
    """SQLite said the disk (or the database's size limit) is full; the write was rolled back."""


class UnavailableError(RagdbError):
    """Not the request's fault and not for ever: try again later (HTTP 503)."""


class DatabaseBusyError(UnavailableError):
    """Another connection holds the write lock (an index run elsewhere); try again later."""


class IndexRunningError(RagdbError):
    """Another index run holds rag.db's index lock (HTTP 409): one run at a time."""
