#!/usr/bin/env bash
# Tool calling with curl, through `hermes-tools serve`: the request OpenAI documents, sent to the
# proxy in front of a model's server that has no tool support.
#
#   hermes-tools serve --upstream http://localhost:11434/v1 &
#   OPENAI_BASE_URL=http://127.0.0.1:8800/v1 HERMES_MODEL=qwen2.5:7b bash cookbook/proxy_curl.sh
#
# The first request answers whole (`tool_calls` in the message), the second streams Server-Sent
# Events (`tool_calls` deltas, then `data: [DONE]`).
set -euo pipefail

BASE_URL="${OPENAI_BASE_URL:-http://127.0.0.1:8800/v1}"
MODEL="${HERMES_MODEL:-qwen2.5:7b}"
REQUEST='{
  "model": "'"$MODEL"'",
  "messages": [{"role": "user", "content": "What is the weather in Oslo?"}],
  "tools": [{
    "type": "function",
    "function": {
      "name": "get_weather",
      "description": "Current weather for a city.",
      "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"]
      }
    }
  }]
}'

echo "# whole"
curl -sS --fail-with-body "$BASE_URL/chat/completions" \
  -H "Content-Type: application/json" \
  -H "Authorization: Bearer ${OPENAI_API_KEY:-not-needed}" \
  -d "$REQUEST"
echo
echo "# streamed"
curl -sS -N --fail-with-body "$BASE_URL/chat/completions" \
  -H "Content-Type: application/json" \
  -H "Authorization: Bearer ${OPENAI_API_KEY:-not-needed}" \
  -d "${REQUEST%\}}, \"stream\": true}"
