"""One module per CLI command; see workstation/cli.py."""
