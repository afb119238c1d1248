"""The one exception class of mini_rag.

Every stage raises :class:`MiniRagError` for bad input (a missing corpus, a malformed
front matter line, an index built for other settings).  The command line turns it into a
message on stderr and exit status 2; nothing else in the package prints tracebacks to users.
"""


class MiniRagError(ValueError):
    """Bad input or state.  ``str(err)`` is the whole user-facing message,
    ideally ``path:line: what is wrong, got 'value'``."""
