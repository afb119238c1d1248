"""Around the stages: the command line (``python -m mini_rag``) and the HTTP API.

One module per step, in pipeline order:

=================  ============================================================
module             what it does
=================  ============================================================
``cli``            ``python -m mini_rag``: gathers the command modules; exit statuses
``cmd_retrieval``  ``index``, ``search``
``cmd_answer``     ``ask``, ``run``, ``eval``, ``compare``
``cmd_gold``       ``check-gold``, ``perturb``
``serve``          ``serve``: seed 000's HTTP API over the pipeline
``runconfig``      one run's configuration: config file, ``--corpus``, ``--index``
=================  ============================================================

Import a module by its full path (``from mini_rag.commands.cli import ...``);
this package re-exports nothing.
"""
