"""`python -m transplant.emulate SCRIPT [ARGS...]`: the same as `transplant emulate`."""

from .cli import main

raise SystemExit(main())
