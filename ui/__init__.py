"""Qt layer: thin widgets over the workstation core."""
