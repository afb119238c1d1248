import os
import signal
import sys


def _early_interrupt(signum, frame):   # Ctrl-C while the modules load: exit 130, no traceback
    os.write(2, b"mini_rag: interrupted\n")
    os._exit(130)


_IGNORED = signal.getsignal(signal.SIGINT) is signal.SIG_IGN     # e.g. a background job: keep it so
if not _IGNORED:
    signal.signal(signal.SIGINT, _early_interrupt)

from .commands.cli import main  # noqa: E402

if not _IGNORED:
    signal.signal(signal.SIGINT, signal.default_int_handler)   # main() turns KeyboardInterrupt into 130
sys.exit(main())
