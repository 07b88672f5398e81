"""Constrained calls: where the server can enforce the shape of a reply, have it do so.

`gbnf` writes grammars (llama.cpp's GBNF), `schema_rules` turns a JSON schema into grammar
rules, `reply_grammar` the whole reply (text, or calls of the bound tools), `servers` what each
kind of server accepts and how an endpoint is probed, `memory` what each endpoint did."""
