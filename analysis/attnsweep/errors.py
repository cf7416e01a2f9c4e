"""The three failures of the analysis, one exit code each (docs/analysis.md): a bad argument or
input is UsageError or SchemaError (exit 2), a file that cannot be read or written
FileAccessError (exit 3)."""


class UsageError(Exception):
    """Bad arguments (exit 2)."""


class SchemaError(Exception):
    """The file is readable but is not a results file of the documented layout (exit 2)."""


class FileAccessError(Exception):
    """The file cannot be opened or read, or an output cannot be written (exit 3)."""
