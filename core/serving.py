"""The built-in server's request handler: what it answers before the application sees a request.

A request line or header block too large for the server (414, 431; 400 for a malformed line) is refused by
the HTTP server itself, which writes an HTML page by default. API clients get the plain JSON error body
(``{"statusCode", "message"}``) instead; the area is unknown at that point, since the path could not be read.
"""

from __future__ import annotations

from werkzeug.serving import WSGIRequestHandler


class JsonErrorRequestHandler(WSGIRequestHandler):
    error_message_format = '{"statusCode": %(code)d, "message": "%(message)s"}'
    error_content_type = "application/json"
