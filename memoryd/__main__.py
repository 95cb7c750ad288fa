"""`python -m memoryd` runs the CLI."""

from memoryd.cli import main

raise SystemExit(main())
