"""llama-cpp-python's server, as `python -m llama_cpp.server` runs it, that also says its
context window at `GET /props` as llama.cpp's own server does (`n_ctx`). Clients that size
their prompt to the window (`tool_budget="auto"`, `hermes-tools doctor`) learn it there.

    python -m hermes_tools.local.llama_server --model FILE --n_ctx 32768 ...

Takes llama_cpp.server's flags (not its config file).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def read_settings(argv: Sequence[str] | None = None) -> tuple[Any, Any]:
    """The server's and the model's settings, read from the command line as llama_cpp.server
    reads them."""
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description="llama_cpp.server, saying its window")
    add_args_from_model(parser, Settings)
    args = parser.parse_args(argv)
    return parse_model_from_args(ServerSettings, args), parse_model_from_args(ModelSettings, args)


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn
    from llama_cpp.server.app import create_app

    server, model = read_settings(argv)
    app = create_app(server_settings=server, model_settings=[model])
    window = model.n_ctx

    @app.get("/props", include_in_schema=False)  # type: ignore[untyped-decorator]
    def props() -> dict[str, object]:
        return {"default_generation_settings": {"n_ctx": window}, "n_ctx": window}

    uvicorn.run(app, host=server.host, port=server.port)


if __name__ == "__main__":
    main()
