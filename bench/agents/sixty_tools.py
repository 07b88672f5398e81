"""A LangGraph agent with sixty tools in the shapes MCP servers publish (files, git, shell, web,
calendar, mail, issue tracker, database, chat, notes, time, text) on the local model: does its
first call pick the right tool?

    uv run python bench/agents/sixty_tools.py                 # 20 tasks, Qwen2.5-Coder-1.5B, 32k
    uv run python bench/agents/sixty_tools.py --tool-budget off

`create_agent` with `ChatHermes` on the model `start_local_model` serves (its window said at
/props, so `tool_budget="auto"` gives the tools a twentieth of it); each task is a new run of the
agent, scored on its first call: the right tool, and the argument that carries the request
(a substring check). The tools answer with a fixed text; only the first call is scored.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool

from hermes_tools.langchain import ChatHermes
from hermes_tools.local import start_local_model

S, N = "string", "integer"
# name: (description, {parameter: (type, description)}, required)
SPECS: dict[str, tuple[str, dict[str, tuple[str, str]], list[str]]] = {
    "read_file": (
        "Read the complete contents of a file from the file system.",
        {"path": (S, "Path of the file")},
        ["path"],
    ),
    "write_file": (
        "Create a new file or overwrite an existing file with new content.",
        {"path": (S, "Path of the file"), "content": (S, "Text to write")},
        ["path", "content"],
    ),
    "edit_file": (
        "Make line-based edits to a text file, replacing exact text.",
        {
            "path": (S, "Path of the file"),
            "old_text": (S, "Text to replace"),
            "new_text": (S, "Replacement"),
        },
        ["path", "old_text", "new_text"],
    ),
    "list_directory": (
        "List the files and directories in a directory.",
        {"path": (S, "Directory path")},
        ["path"],
    ),
    "create_directory": (
        "Create a new directory, with its parents if needed.",
        {"path": (S, "Directory path")},
        ["path"],
    ),
    "move_file": (
        "Move or rename a file or directory.",
        {"source": (S, "Current path"), "destination": (S, "New path")},
        ["source", "destination"],
    ),
    "search_files": (
        "Recursively search for files whose names match a pattern.",
        {"path": (S, "Where to start"), "pattern": (S, "Glob pattern")},
        ["path", "pattern"],
    ),
    "get_file_info": (
        "Get a file's metadata: size, times, permissions.",
        {"path": (S, "Path")},
        ["path"],
    ),
    "directory_tree": (
        "Get a recursive tree of files and directories as JSON.",
        {"path": (S, "Root directory")},
        ["path"],
    ),
    "delete_file": (
        "Delete a file from the file system.",
        {"path": (S, "Path of the file")},
        ["path"],
    ),
    "git_status": (
        "Show the working tree status of a git repository.",
        {"repo_path": (S, "Repository path")},
        ["repo_path"],
    ),
    "git_diff": (
        "Show unstaged changes in the working tree of a git repository.",
        {"repo_path": (S, "Repository path")},
        ["repo_path"],
    ),
    "git_commit": (
        "Record staged changes to the repository with a commit message.",
        {"repo_path": (S, "Repository path"), "message": (S, "Commit message")},
        ["repo_path", "message"],
    ),
    "git_log": (
        "Show the commit history of a git repository.",
        {"repo_path": (S, "Repository path"), "max_count": (N, "How many commits")},
        ["repo_path"],
    ),
    "git_branch": (
        "List the branches of a git repository.",
        {"repo_path": (S, "Repository path")},
        ["repo_path"],
    ),
    "git_checkout": (
        "Switch to another branch in a git repository.",
        {"repo_path": (S, "Repository path"), "branch": (S, "Branch name")},
        ["repo_path", "branch"],
    ),
    "git_add": (
        "Stage files for the next commit.",
        {"repo_path": (S, "Repository path"), "files": (S, "Files to stage")},
        ["repo_path", "files"],
    ),
    "git_show": (
        "Show the contents of a commit.",
        {"repo_path": (S, "Repository path"), "revision": (S, "Commit id")},
        ["repo_path", "revision"],
    ),
    "run_command": (
        "Run a shell command and return its output.",
        {"command": (S, "The command line")},
        ["command"],
    ),
    "run_script": (
        "Run a script file with its interpreter.",
        {"path": (S, "Script path")},
        ["path"],
    ),
    "list_processes": ("List the running processes.", {}, []),
    "kill_process": ("Stop a running process by its id.", {"pid": (N, "Process id")}, ["pid"]),
    "fetch_url": (
        "Fetch a URL from the internet and return its content as text.",
        {"url": (S, "The URL")},
        ["url"],
    ),
    "web_search": (
        "Search the web and return the top results.",
        {"query": (S, "Search terms")},
        ["query"],
    ),
    "download_file": (
        "Download a file from a URL to a local path.",
        {"url": (S, "The URL"), "path": (S, "Where to save it")},
        ["url", "path"],
    ),
    "create_event": (
        "Create a calendar event.",
        {
            "title": (S, "Event title"),
            "start": (S, "Start time, ISO 8601"),
            "attendees": (S, "Who to invite"),
        },
        ["title", "start"],
    ),
    "list_events": (
        "List calendar events between two dates.",
        {"start_date": (S, "From, YYYY-MM-DD"), "end_date": (S, "To, YYYY-MM-DD")},
        ["start_date"],
    ),
    "update_event": (
        "Change a calendar event's time or title.",
        {"event_id": (S, "Event id"), "start": (S, "New start")},
        ["event_id"],
    ),
    "delete_event": ("Delete a calendar event.", {"event_id": (S, "Event id")}, ["event_id"]),
    "find_free_time": (
        "Find free time slots in the calendar on a day.",
        {"date": (S, "YYYY-MM-DD")},
        ["date"],
    ),
    "list_calendars": ("List the calendars the user can see.", {}, []),
    "send_email": (
        "Send an email.",
        {"to": (S, "Recipient address"), "subject": (S, "Subject"), "body": (S, "Message text")},
        ["to", "subject", "body"],
    ),
    "search_emails": (
        "Search the mailbox for emails matching a query.",
        {"query": (S, "Search query")},
        ["query"],
    ),
    "read_email": ("Read one email by its id.", {"email_id": (S, "Email id")}, ["email_id"]),
    "reply_email": (
        "Reply to an email.",
        {"email_id": (S, "Email id"), "body": (S, "Reply text")},
        ["email_id", "body"],
    ),
    "archive_email": ("Move an email to the archive.", {"email_id": (S, "Email id")}, ["email_id"]),
    "list_mail_folders": ("List the mailbox's folders.", {}, []),
    "draft_email": (
        "Save an email as a draft without sending it.",
        {"to": (S, "Recipient"), "body": (S, "Text")},
        ["to", "body"],
    ),
    "create_issue": (
        "Create a new issue in the issue tracker.",
        {"title": (S, "Issue title"), "body": (S, "Description")},
        ["title"],
    ),
    "get_issue": ("Get one issue by its number.", {"number": (N, "Issue number")}, ["number"]),
    "list_issues": ("List the open issues of the project.", {"state": (S, "open or closed")}, []),
    "update_issue": (
        "Change an issue's title or description.",
        {"number": (N, "Issue number"), "title": (S, "New title")},
        ["number"],
    ),
    "comment_on_issue": (
        "Add a comment to an issue.",
        {"number": (N, "Issue number"), "body": (S, "Comment text")},
        ["number", "body"],
    ),
    "close_issue": ("Close an issue.", {"number": (N, "Issue number")}, ["number"]),
    "assign_issue": (
        "Assign an issue to a person.",
        {"number": (N, "Issue number"), "assignee": (S, "User name")},
        ["number", "assignee"],
    ),
    "search_issues": ("Search issues by text.", {"query": (S, "Search text")}, ["query"]),
    "add_label": (
        "Add a label to an issue.",
        {"number": (N, "Issue number"), "label": (S, "Label")},
        ["number", "label"],
    ),
    "run_sql_query": (
        "Run a read-only SQL query on the database.",
        {"sql": (S, "The SQL")},
        ["sql"],
    ),
    "list_tables": ("List the tables in the database.", {}, []),
    "describe_table": (
        "Show a table's columns and their types.",
        {"table": (S, "Table name")},
        ["table"],
    ),
    "post_message": (
        "Post a message to a chat channel.",
        {"channel": (S, "Channel name"), "text": (S, "Message")},
        ["channel", "text"],
    ),
    "list_channels": ("List the chat channels.", {}, []),
    "read_channel": (
        "Read the latest messages of a chat channel.",
        {"channel": (S, "Channel name")},
        ["channel"],
    ),
    "create_note": (
        "Create a note in the notebook.",
        {"title": (S, "Title"), "text": (S, "Note text")},
        ["title", "text"],
    ),
    "search_notes": ("Search the notebook's notes.", {"query": (S, "Search text")}, ["query"]),
    "get_current_time": (
        "Get the current time in a time zone.",
        {"timezone": (S, "IANA time zone, e.g. Europe/Paris")},
        ["timezone"],
    ),
    "convert_timezone": (
        "Convert a time from one time zone to another.",
        {"time": (S, "HH:MM"), "from_zone": (S, "Zone"), "to_zone": (S, "Zone")},
        ["time", "from_zone", "to_zone"],
    ),
    "translate_text": (
        "Translate text into another language.",
        {"text": (S, "Text"), "target_language": (S, "Language")},
        ["text", "target_language"],
    ),
    "summarize_text": (
        "Summarize a long text in a few sentences.",
        {"text": (S, "Text")},
        ["text"],
    ),
    "calculator": (
        "Evaluate an arithmetic expression.",
        {"expression": (S, "The expression")},
        ["expression"],
    ),
}
# The request, the right tool, and (argument, a text it must hold) for the right argument.
TASKS: list[tuple[str, str, tuple[str, str] | None]] = [
    ("Show me what is in README.md.", "read_file", ("path", "README.md")),
    ("List the files in the src folder.", "list_directory", ("path", "src")),
    (
        "What changed in the repository at /repo? Show the git diff.",
        "git_diff",
        ("repo_path", "/repo"),
    ),
    (
        "Commit the staged changes in /repo with the message 'Fix typo'.",
        "git_commit",
        ("message", "Fix typo"),
    ),
    ("Run the command pytest -q.", "run_command", ("command", "pytest")),
    (
        "Fetch https://example.com/status and tell me what it says.",
        "fetch_url",
        ("url", "example.com/status"),
    ),
    ("Search the web for the latest Python release.", "web_search", ("query", "Python")),
    (
        "Schedule a meeting titled Planning on 2026-12-04 at 10:00 with Ana.",
        "create_event",
        ("title", "Planning"),
    ),
    ("What is on my calendar on 2026-12-01?", "list_events", ("start_date", "2026-12-01")),
    (
        "Send an email to bob@example.com with the subject Build saying the build is fixed.",
        "send_email",
        ("to", "bob@example.com"),
    ),
    ("Find the emails about the invoice.", "search_emails", ("query", "invoice")),
    ("Open a new issue: the login page crashes on Safari.", "create_issue", ("title", "login")),
    ("Close issue 42.", "close_issue", ("number", "42")),
    ("Add a comment to issue 17 saying it is fixed in main.", "comment_on_issue", ("number", "17")),
    ("Which tables are in the database?", "list_tables", None),
    ("Post 'deploy done' to the ops channel.", "post_message", ("channel", "ops")),
    ("What time is it in Tokyo right now?", "get_current_time", ("timezone", "Tokyo")),
    ("Create a folder named build.", "create_directory", ("path", "build")),
    ("Show the last 5 commits of the repository at /repo.", "git_log", ("repo_path", "/repo")),
    ("Translate 'good morning' into French.", "translate_text", ("target_language", "French")),
]


def tools() -> list[StructuredTool]:
    made = []
    for name, (description, parameters, required) in SPECS.items():
        schema = {
            "type": "object",
            "properties": {p: {"type": t, "description": d} for p, (t, d) in parameters.items()},
            "required": required,
        }
        made.append(
            StructuredTool.from_function(
                func=lambda **_: "done", name=name, description=description, args_schema=schema
            )
        )
    return made


def first_call(agent: Any, request: str) -> tuple[str, dict[str, Any]] | None:
    for update in agent.stream({"messages": [HumanMessage(request)]}, stream_mode="updates"):
        for step in update.values():
            for message in step.get("messages", []) if isinstance(step, dict) else []:
                if isinstance(message, AIMessage):
                    calls = message.tool_calls
                    return (calls[0]["name"], calls[0]["args"]) if calls else None
    return None


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--model", default="qwen2.5-coder-1.5b")
    options.add_argument("--context", type=int, default=32768)
    options.add_argument("--tool-budget", default="auto", help="auto, off or a number of tokens")
    args = options.parse_args()
    budget: Any = {"auto": "auto", "off": None}.get(args.tool_budget, args.tool_budget)
    budget = int(budget) if isinstance(budget, str) and budget.isdigit() else budget
    right = 0
    with start_local_model(args.model, context=args.context) as server:
        model = ChatHermes(
            model=server.alias, base_url=server.base_url, temperature=0, tool_budget=budget
        )
        agent = create_agent(model, tools())
        for request, tool, argument in TASKS:
            started = time.monotonic()
            call = first_call(agent, request)
            seconds = time.monotonic() - started
            ok = call is not None and call[0] == tool
            if ok and argument is not None and call is not None:
                key, text = argument
                ok = text.lower() in str(call[1].get(key, "")).lower()
            right += ok
            said = f"{call[0]}({call[1]})" if call else "no call"
            print(
                f"{'RIGHT' if ok else 'wrong'} {seconds:5.1f} s  {request!r} -> {said}", flush=True
            )
    print(f"right tool and argument on {right} of {len(TASKS)} ({right / len(TASKS):.0%})")


if __name__ == "__main__":
    main()
