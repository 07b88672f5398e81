"""`hermes-tools doctor --calibrate`: measure which options make a model call tools best.

`probes` holds the cases and their split, `candidates` the options tried and the coordinate
search over them, `measure` runs one configuration on probes, `progress` is the line on
stderr, `profile` writes the `[[models]]` rule, and `run` ties them into the command.
"""

from hermes_tools._calibrate.run import run

__all__ = ["run"]
