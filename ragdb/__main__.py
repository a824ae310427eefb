"""`python -m ragdb` is the `ragdb` command."""

from ragdb.cli import main

if __name__ == "__main__":
    main()
