"""JSON text, below everything that reads or writes it: the lenient incremental lexer
(`lexer`), partial and whole values read with it (`partial`), json-repair's readings and which
to trust (`repairs`), the canonical writer (`writer`), the limits on what is read (`limits`),
and what closes a text still being written (`closing`). It imports nothing of hermes_tools but
`errors`, so the tools, the parser, the prompt and the policy all build on it."""
