"""The bodies of the ``flower`` commands: ``flower.cli.app`` only parses, these run.

Each body returns its exit code (``flower.cli.exitcodes``); one module per command, plus
``local`` (what go/run/once share to run a workflow in this process) and ``temporal`` (the
commands that talk to a Temporal server).
"""
