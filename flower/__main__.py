"""``python -m flower`` — same as the ``flower`` console script."""

from flower.cli import main

if __name__ == "__main__":
    main()
