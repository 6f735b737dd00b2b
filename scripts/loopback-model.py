"""A loopback OpenAI-compatible model that answers every request at once with "Hello!".

Used by scripts/startup-order.sh and scripts/rss-guard.sh: `python3 loopback-model.py PORT`.
"""

import http.server
import json
import sys

STREAMED = (
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{"role":"assistant","content":"Hello!"},"finish_reason":null}]}\n\n'
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
).encode()
WHOLE = json.dumps(
    {
        "id": "c1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello!"},
                "finish_reason": "stop",
            }
        ],
    }
).encode()


class Model(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        streamed = b'"stream":true' in body
        answer = STREAMED if streamed else WHOLE
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if streamed else "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Model).serve_forever()
