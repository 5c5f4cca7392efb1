"""What the command line draws: the live terminal, the renderer, the setup screen."""
