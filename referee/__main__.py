"""``python3 -m referee``: the scorer's command line (the same as ``python3 score_eval.py``)."""
from __future__ import annotations

# -- early interrupt handler (copied to the top of score_eval.py) --
if __name__ == "__main__":                # Ctrl-C while the module loads: exit 130, no traceback
    import os as _os                      # imported whole before the handler exists: an import
    import signal as _signal              # inside it could meet a half-initialised module

    def _early_interrupt(signum, frame):
        _os.write(2, b"score_eval: interrupted\n")
        _os._exit(130)
    if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _early_interrupt)
# -- end of the early interrupt handler --

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
