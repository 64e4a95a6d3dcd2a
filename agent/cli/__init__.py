"""The command line: parser, flags, one module per command, output formats.

May import: every other layer (it is the top).
"""
